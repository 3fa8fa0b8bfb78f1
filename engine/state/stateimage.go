package state

import (
	"os"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// newImage returns the bytes of a new state file: flow's buckets and, with first set,
// first as run 1 (its ID is returned; first is left as it was). bbolt builds it in a
// scratch file in memory, so neither its initialisation nor its commit waits for a
// disk: the one fsync is the caller's, after writeImage.
func newImage(first *Run) (image []byte, firstID uint64, err error) {
	scratch, err := newScratch()
	if err != nil {
		return nil, 0, err
	}
	opts := boltOptions(false, time.Second, func(string, int, os.FileMode) (*os.File, error) { return scratch, nil })
	db, err := bolt.Open(scratch.Name(), 0o600, opts) // closes scratch on db.Close
	if err != nil {
		scratch.Close()
		return nil, 0, err
	}
	defer db.Close()
	db.NoSync = true
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(keySchema, []byte(strconv.Itoa(schemaVersion))); err != nil {
			return err
		}
		if err := meta.Put(keyLineage, []byte(newLineage())); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bucketRuns); err != nil {
			return err
		}
		if _, err = tx.CreateBucket(bucketRun); err != nil || first == nil {
			return err
		}
		firstID, err = createRun(tx, first)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	// bbolt writes pages with pwrite, so the scratch file holds the committed database
	// up to its high water mark.
	var size int64
	if err := db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return nil, 0, err
	}
	image = make([]byte, size)
	if _, err := scratch.ReadAt(image, 0); err != nil {
		return nil, 0, err
	}
	return image, firstID, nil
}

// writeImage writes image to the empty file f, sizes f to presize and syncs it.
func writeImage(f *os.File, image []byte) error {
	if _, err := f.Write(image); err != nil {
		return err
	}
	// Sized ahead (sparse: no blocks are allocated), so the first commits of a run
	// find room and skip bbolt's grow, a truncate and an fsync each.
	if err := f.Truncate(presize); err != nil {
		return err
	}
	return f.Sync()
}

// newScratch gives newImage its scratch file; a variable so tests can take the fallback.
var newScratch = scratchFile

// tempScratch is a scratch file in the temporary directory, unnamed once open (where
// the system allows removing an open file).
func tempScratch() (*os.File, error) {
	f, err := os.CreateTemp("", "flow-state-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}
