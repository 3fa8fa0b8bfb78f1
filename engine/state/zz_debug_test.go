package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestZZ(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.db")
	makeState(t, orig)
	valid := readFile(t, orig)
	ps := os.Getpagesize()
	b := bytes.Clone(valid)
	p := b[56*ps : 57*ps]
	binary.LittleEndian.PutUint16(p[8:], 0x02)
	binary.LittleEndian.PutUint16(p[10:], 0xffff)
	binary.LittleEndian.PutUint32(p[12:], 0)
	for i := 16; i < len(p); i++ {
		p[i] = 0xff
	}
	path := filepath.Join(dir, "state.db")
	writeFile(t, path, b)
	_, err := Open(path, Options{})
	fmt.Println(err)
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		fmt.Println(e.Name(), l)
	}
	s, err := Open(path, Options{ReadOnly: true})
	fmt.Println(s, err)
}
