package command

import (
	"os"
	osexec "os/exec"
	"strings"
	"sync"
)

// programs caches where a PATH lookup found a program: a run often starts the same
// program thousands of times, and each lookup stats every PATH directory. A hit is
// not checked: if the program went, starting it fails, and Run forgets the entry and
// looks again, as a shell does with its hash table. A miss is never cached, so a
// program that an earlier task installs is found.
var programs sync.Map // PATH + "\x00" + name -> absolute path

// cachedLookPath resolves a bare program name as os/exec would, and reports whether
// the answer came from the cache. It reports ok false for names with a slash and for
// programs not found; os/exec then does (and reports) the lookup itself.
func cachedLookPath(name string) (path string, cached, ok bool) {
	if strings.ContainsRune(name, '/') {
		return "", false, false
	}
	key := os.Getenv("PATH") + "\x00" + name
	if p, ok := programs.Load(key); ok {
		return p.(string), true, true
	}
	p, err := osexec.LookPath(name)
	if err != nil || !strings.HasPrefix(p, "/") {
		return "", false, false
	}
	programs.Store(key, p)
	return p, false, true
}

// forgetProgram drops name's cached path, after starting it from there failed.
func forgetProgram(name string) {
	programs.Delete(os.Getenv("PATH") + "\x00" + name)
}
