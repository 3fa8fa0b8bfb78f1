package process

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// record is what a pid file holds: the pid on the first line, so that
// `kill $(head -n1 FILE)` works, then a JSON line with the argv the process was started
// with, its start time and the boot it started in.
//
// The process is identified by pid, start time and boot: a later process that reuses
// the pid, even one running the same command, started at another time. The command
// line is not part of the identity, so a wrapper that execs its program (sh -c 'exec
// ...') is still recognised; argv records what was asked for, to tell a changed
// command.
type record struct {
	PID    int      `json:"-"`
	Argv   []string `json:"argv"`
	Start  uint64   `json:"start_ticks"` // field 22 of /proc/PID/stat: clock ticks after boot
	BootID string   `json:"boot_id"`     // start_ticks count from this boot
}

// matches reports whether p is the process r recorded: alive, and started at the
// recorded time of this boot.
func (r record) matches(p procInfo) bool {
	return p.Alive && p.Start == r.Start && r.BootID == bootID()
}

// bootID identifies the running kernel's boot; "" where /proc does not say.
var bootID = sync.OnceValue(func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
})

// label names the process in messages: `process "sleep" (pid 123)`.
func (r record) label() string {
	return fmt.Sprintf("process %q (pid %d)", filepath.Base(r.Argv[0]), r.PID)
}

// readRecord reads the pid file at path; ok is false when there is none.
func readRecord(path string) (rec record, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, fmt.Errorf("read pid file %s: %w", path, err)
	}
	rec, err = parseRecord(b)
	if err != nil {
		return record{}, false, fmt.Errorf("pid file %s: %w", path, err)
	}
	return rec, true, nil
}

func parseRecord(b []byte) (record, error) {
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(first)))
	if err != nil || pid <= 0 {
		return record{}, fmt.Errorf("first line %q is not a pid", first)
	}
	rec := record{PID: pid}
	if err := json.Unmarshal(rest, &rec); err != nil || len(rec.Argv) == 0 || rec.Start == 0 {
		return record{}, errors.New("not written by flow: the second line must record argv and start_ticks")
	}
	return rec, nil
}

// writeRecord replaces the pid file at path atomically, creating its directory, so a
// reader never sees half a file.
func writeRecord(path string, rec record) error {
	meta, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("write pid file %s: %w", path, err)
	}
	data := fmt.Appendf(nil, "%d\n%s\n", rec.PID, meta)
	if err := writeAtomic(path, data); err != nil {
		return fmt.Errorf("write pid file %s: %w", path, err)
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// removeRecord deletes the pid file; one already gone is fine.
func removeRecord(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove pid file %s: %w", path, err)
	}
	return nil
}

// RecordedGroup returns the process group of the process the pid file at path
// records, when that process still runs (the process task makes it lead a group of
// its own); ok is false when there is no such file or process. Other task families
// use it to tell this flow's processes from others.
func RecordedGroup(path string) (pgrp int, ok bool, err error) {
	rec, found, err := readRecord(path)
	if err != nil || !found {
		return 0, false, err
	}
	info, err := inspect(rec.PID)
	if err != nil || !rec.matches(info) {
		return 0, false, err
	}
	return info.Group, true, nil
}

// Group returns the process group of pid, or 0 when no such process runs.
func Group(pid int) (int, error) {
	info, err := inspect(pid)
	if err != nil || !info.Alive {
		return 0, err
	}
	return info.Group, nil
}
