package command

import (
	"os"
	osexec "os/exec"
	"strings"
	"sync"
)

// programs caches where a PATH lookup found a program: a run often starts the same
// program thousands of times, and each lookup stats every PATH directory. A hit costs
// one stat to confirm; a miss is never cached, so a program that an earlier task
// installs is found.
var programs sync.Map // PATH + "\x00" + name -> absolute path

// cachedLookPath resolves a bare program name as os/exec would. It reports false for
// names with a slash and for programs not found; os/exec then does (and reports) the
// lookup itself.
func cachedLookPath(name string) (string, bool) {
	if strings.ContainsRune(name, '/') {
		return "", false
	}
	key := os.Getenv("PATH") + "\x00" + name
	if p, ok := programs.Load(key); ok {
		if fi, err := os.Stat(p.(string)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p.(string), true
		}
		programs.Delete(key)
	}
	p, err := osexec.LookPath(name)
	if err != nil || !strings.HasPrefix(p, "/") {
		return "", false
	}
	programs.Store(key, p)
	return p, true
}
