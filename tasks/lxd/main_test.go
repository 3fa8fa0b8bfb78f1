package lxd

import (
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/flowdev/flow/internal/ci"
)

// These tests talk to the real LXD daemon on this machine (make test starts it
// with scripts/lab-setup.sh). Under CI (internal/ci) a missing daemon fails the
// package. Elsewhere only the offline tests run without one (Validate, type
// registration: the names offlineTests matches), and the rest are counted and
// reported as not run, on the terminal too.
func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := connect(ctx, nil)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lxd tests need a running LXD daemon (run scripts/lab-setup.sh): %v\n", err)
		if ci.Enabled() {
			fmt.Fprintf(os.Stderr, "FAIL: CI=%s and no LXD daemon\n", os.Getenv("CI"))
			os.Exit(1)
		}
		flag.Parse()
		if err := flag.Set("test.run", offlineTests); err != nil {
			panic(err)
		}
		msg := "no LXD daemon: running only the offline tests (" + offlineTests + ")"
		if n, err := notRun(".", offlineTests); err == nil {
			msg = fmt.Sprintf("tasks/lxd: %d tests not run: no LXD daemon (only the offline tests run: %s)", n, offlineTests)
		}
		fmt.Println(msg)
		// go test ./... shows a passing package's output only with -v: say it on
		// the terminal too, so that "ok" is not mistaken for the daemon tests passing.
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprintln(tty, msg)
			tty.Close()
		}
	}
	os.Exit(m.Run())
}

// notRun counts the tests in the _test.go files of dir whose names offline does
// not match: the tests that narrowing -test.run to it leaves out.
func notRun(dir, offline string) (int, error) {
	re := regexp.MustCompile(offline)
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return 0, err
	}
	n := 0
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv == nil && isTest(fn) && !re.MatchString(fn.Name.Name) {
				n++
			}
		}
	}
	return n, nil
}

// isTest reports whether fn is a test go test runs: TestXxx(t *testing.T).
func isTest(fn *ast.FuncDecl) bool {
	name, ok := strings.CutPrefix(fn.Name.Name, "Test")
	if !ok || fn.Name.Name == "TestMain" || fn.Type.Params.NumFields() != 1 {
		return false
	}
	r, _ := utf8.DecodeRuneInString(name)
	return name == "" || !unicode.IsLower(r)
}

// offlineTests matches the tests that need no LXD daemon.
const offlineTests = `^Test(\w*Validate\w*|\w*Type|\w*TypesA)$`

// testPrefix keeps this package's LXD objects apart from the e2e tests' and
// from the local lab's, which may run on the same daemon at the same time.
const testPrefix = "tlxd-"

var nameSeq atomic.Int64

// testName returns a fresh LXD object name (instance, profile, alias) valid as
// a hostname, and deletes nothing: callers register their own cleanup.
func testName(kind string) string {
	return fmt.Sprintf("%s%s-%d-%d", testPrefix, kind, os.Getpid()%100000, nameSeq.Add(1))
}

var (
	imageOnce  sync.Once
	imageAlias string
	imageErr   error
)

// testImage imports, once per test binary, a copy of the local lab's busybox image
// whose metadata says it is the tests' (so its fingerprint differs from the lab's and
// the lab's teardown can never delete it), under the alias tlxd-busybox, and returns
// the alias.
func testImage(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() { imageAlias, imageErr = importTestImage() })
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageAlias
}

func importTestImage() (string, error) {
	const alias = testPrefix + "busybox"
	if exec.Command("lxc", "image", "show", alias).Run() == nil {
		return alias, nil
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	out, err := exec.Command("bash", filepath.Join(root, "scripts", "busybox-image.sh")).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build busybox image: %v: %s", err, out)
	}
	dir, err := os.MkdirTemp("", "tlxd-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	script := `set -e
cd "$1"
tar -xzf "$2"
sed -i 's/^  description: .*/  description: busybox (flow tasks\/lxd tests)/' metadata.yaml
tar -czf test.tar.gz metadata.yaml rootfs
lxc image import test.tar.gz --alias "$3" >/dev/null 2>&1 || {
  fp=$(sha256sum test.tar.gz | cut -d' ' -f1)
  lxc image alias create "$3" "$fp"
}`
	tarball := filepath.Join(root, strings.TrimSpace(string(out)))
	if out, err := exec.Command("sh", "-c", script, "sh", dir, tarball, alias).CombinedOutput(); err != nil &&
		exec.Command("lxc", "image", "show", alias).Run() != nil {
		return "", fmt.Errorf("import test image: %v: %s", err, out)
	}
	return alias, nil
}

// lxc runs the lxc CLI for test setup and inspection; the code under test
// never shells out to it.
func lxc(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("lxc", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("lxc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// deleteInstanceAtCleanup force-deletes an instance when the test ends.
func deleteInstanceAtCleanup(t *testing.T, name string) {
	t.Cleanup(func() { _ = exec.Command("lxc", "delete", "--force", name).Run() })
}

// lxcQuiet runs the lxc CLI for cleanup, where a failure is not the test's.
func lxcQuiet(args ...string) error {
	return exec.Command("lxc", args...).Run()
}
