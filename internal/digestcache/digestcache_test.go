package digestcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func sha(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// entries counts the cache's entries.
func entries(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(es)
}

func TestSum(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("FLOW_DIGEST_CACHE", cache)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("alpha"), 0o644)
	os.WriteFile(b, []byte("beta"), 0o644)
	ctx := context.Background()

	got, err := Sum(ctx, a, b)
	if err != nil || got != sha("alpha", "beta") {
		t.Fatalf("Sum = %s, %v; want the digest of both contents", got, err)
	}
	if n := entries(t, cache); n != 1 {
		t.Fatalf("%d cache entries after one Sum, want 1", n)
	}
	// An unchanged file is not read again: the entry answers (seen by changing it).
	es, _ := os.ReadDir(cache)
	os.WriteFile(filepath.Join(cache, es[0].Name()), []byte(sha("from the cache")), 0o644)
	if got, _ := Sum(ctx, a, b); got != sha("from the cache") {
		t.Errorf("an unchanged file was read again: %s", got)
	}

	// Same size, same modification time, other bytes: the change time tells.
	info, _ := os.Stat(a)
	time.Sleep(10 * time.Millisecond)
	os.WriteFile(a, []byte("ALPHA"), 0o644)
	os.Chtimes(a, info.ModTime(), info.ModTime())
	if got, _ := Sum(ctx, a, b); got != sha("ALPHA", "beta") {
		t.Errorf("a file rewritten with its old size and time kept its old digest: %s", got)
	}
}

func TestSumWithoutCache(t *testing.T) {
	t.Setenv("FLOW_DIGEST_CACHE", "/proc/no-such-dir/cache") // cannot be written
	a := filepath.Join(t.TempDir(), "a")
	os.WriteFile(a, []byte("alpha"), 0o644)
	if got, err := Sum(context.Background(), a); err != nil || got != sha("alpha") {
		t.Errorf("Sum = %s, %v; want the digest, read", got, err)
	}
	if _, err := Sum(context.Background(), filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) {
		t.Errorf("Sum of a missing file: %v, want not exist", err)
	}
}

func TestSumCancelled(t *testing.T) {
	t.Setenv("FLOW_DIGEST_CACHE", t.TempDir())
	a := filepath.Join(t.TempDir(), "a")
	os.WriteFile(a, []byte("alpha"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Sum(ctx, a); err == nil {
		t.Error("Sum with a cancelled context read the file")
	}
}
