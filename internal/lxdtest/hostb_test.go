package lxdtest

import "testing"

// An image the main daemon does not have is skipped: scripts/fresh-path.sh deletes the
// lab's images, and a start after it once ended silently with status 1.
func TestStartSkipsImagesTheMainDaemonLacks(t *testing.T) {
	StartHostB(t)
	if out, err := scriptWith("start", "flow-no-such-image flow-lab-busybox"); err != nil {
		t.Fatalf("start with an image the main daemon lacks: %v\n%s", err, out)
	}
}
