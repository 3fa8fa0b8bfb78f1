package lxd

import (
	"errors"
	"io/fs"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
)

func TestImageImportUnifiedThenAlreadyPresent(t *testing.T) {
	alias := testName("img")
	file := testImageFiles(t, alias, false)[0]
	want := sha256Files(t, file)
	deleteImageAtCleanup(t, want)
	i := &ImageImport{File: file, Alias: alias, Description: "flow test image"}
	out, printed := mustValidateAndRun(t, i)
	wantContains(t, "output", printed, "uploading", "uploaded", "points at")
	if got := out["fingerprint"].AsString(); got != want {
		t.Errorf("fingerprint output = %s, want sha256 of the file %s", got, want)
	}
	if got := imageFingerprint(t, alias); got != want {
		t.Errorf("LXD's fingerprint = %s, want %s", got, want)
	}
	if out["alias"].AsString() != alias {
		t.Errorf("alias output = %q", out["alias"].AsString())
	}
	if size := out["size"].AsBigFloat(); size.Cmp(big.NewFloat(0)) <= 0 {
		t.Errorf("size = %s, want > 0", size)
	}
	wantContains(t, "lxc image info", lxc(t, "image", "info", alias), "description: flow test image")

	_, printed = mustValidateAndRun(t, i)
	wantContains(t, "re-run output", printed, "already present")
	if strings.Contains(printed, "upload") {
		t.Errorf("re-run uploaded again:\n%s", printed)
	}
}

// LXD's fingerprint of a split image is the sha256 of metadata then rootfs;
// the task computes it locally so a re-run needs no upload.
func TestImageImportSplitFingerprintMatchesLXD(t *testing.T) {
	alias := testName("img")
	files := testImageFiles(t, alias, true)
	want := sha256Files(t, files...)
	deleteImageAtCleanup(t, want)
	out, _ := mustValidateAndRun(t, &ImageImport{Metadata: files[0], Rootfs: files[1], Alias: alias})
	if got := imageFingerprint(t, alias); got != want || out["fingerprint"].AsString() != want {
		t.Errorf("LXD's fingerprint = %s, output %s, want sha256(metadata+rootfs) %s", got, out["fingerprint"].AsString(), want)
	}
}

func TestImageImportImageWithoutAliasGetsAlias(t *testing.T) {
	alias := testName("img")
	file := testImageFiles(t, alias, false)[0]
	fp := sha256Files(t, file)
	deleteImageAtCleanup(t, fp)
	lxc(t, "image", "import", file)
	_, printed := mustValidateAndRun(t, &ImageImport{File: file, Alias: alias})
	wantContains(t, "output", printed, "already in the store", "points at")
	if strings.Contains(printed, "uploading") {
		t.Errorf("uploaded an image the store has:\n%s", printed)
	}
	if got := imageFingerprint(t, alias); got != fp {
		t.Errorf("alias points at %s, want %s", got, fp)
	}
}

func TestImageImportAliasElsewhereFailsThenRecreateMoves(t *testing.T) {
	alias := testName("img")
	oldFile := testImageFiles(t, alias+"-old", false)[0]
	newFile := testImageFiles(t, alias, false)[0]
	oldFP, newFP := sha256Files(t, oldFile), sha256Files(t, newFile)
	deleteImageAtCleanup(t, oldFP)
	deleteImageAtCleanup(t, newFP)
	lxc(t, "image", "import", oldFile, "--alias", alias)

	i := &ImageImport{File: newFile, Alias: alias}
	_, _, err := validateAndRun(t, i)
	if err == nil {
		t.Fatal("Run() succeeded although the alias points at another image")
	}
	wantContains(t, "error", err.Error(), `import image "`+alias+`": alias points at image `+oldFP+`, but the file's fingerprint is `+newFP, "recreate = true")

	i.Recreate = true
	_, printed := mustValidateAndRun(t, i)
	wantContains(t, "output", printed, "uploaded", "moved from")
	if got := imageFingerprint(t, alias); got != newFP {
		t.Errorf("alias points at %s after recreate, want %s", got, newFP)
	}
}

func TestImageImportMissingFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nosuch.tar.gz")
	_, _, err := validateAndRun(t, &ImageImport{File: file, Alias: "tlxd-never"})
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), `import image "tlxd-never": open `+file) {
		t.Errorf("Run() = %v, want `import image \"tlxd-never\": open %s: no such file or directory`", err, file)
	}
}
