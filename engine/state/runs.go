package state

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// CreateRun stores r as a new run and records it as the latest run. It
// assigns r.ID from a sequence (1, 2, 3, ...; whatever r.ID held is
// ignored) and sets r.ID only if it succeeds; on failure nothing is stored.
func (s *Store) CreateRun(r *Run) error {
	if err := r.check(); err != nil {
		return s.errorf(err, "create run")
	}
	if s != nil && s.pg != nil {
		id, err := s.pg.createRun(r)
		if err != nil {
			return s.errorf(err, "create run")
		}
		r.ID = id
		return nil
	}
	var id uint64
	err := s.update(func(tx *bolt.Tx) (err error) {
		id, err = createRun(tx, r)
		return err
	})
	if err != nil {
		return s.errorf(err, "create run")
	}
	r.ID = id
	return nil
}

// createRun stores a copy of r under the next run ID, with its empty buckets, and
// makes it the latest run; it returns the ID and leaves r as it was.
func createRun(tx *bolt.Tx, r *Run) (uint64, error) {
	runs := tx.Bucket(bucketRuns)
	id, err := runs.NextSequence()
	if err != nil {
		return 0, err
	}
	rec := *r
	rec.ID = id
	data, err := json.Marshal(&rec)
	if err != nil {
		return 0, err
	}
	key := itob(id)
	if err := runs.Put(key, data); err != nil {
		return 0, err
	}
	rb, err := tx.Bucket(bucketRun).CreateBucket(key)
	if err != nil {
		return 0, err
	}
	if _, err := rb.CreateBucket(bucketInstances); err != nil {
		return 0, err
	}
	if _, err := rb.CreateBucket(bucketLogs); err != nil {
		return 0, err
	}
	return id, tx.Bucket(bucketMeta).Put(keyLatest, key)
}

// PutRun replaces the stored record of run r.ID with r, durably. It returns
// an error wrapping ErrNotFound if there is no such run (runs are created
// only by CreateRun). On failure the stored record is unchanged.
func (s *Store) PutRun(r *Run) error {
	if err := r.check(); err != nil {
		return s.errorf(err, "put run")
	}
	var err error
	if s != nil && s.pg != nil {
		err = s.pg.putRun(r)
	} else {
		err = s.update(func(tx *bolt.Tx) error { return putRun(tx, r) })
	}
	if err != nil {
		return s.errorf(err, "put run %d", r.ID)
	}
	return nil
}

// putRun replaces the record of an existing run.
func putRun(tx *bolt.Tx, r *Run) error {
	runs := tx.Bucket(bucketRuns)
	key := itob(r.ID)
	if runs.Get(key) == nil {
		return ErrNotFound
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return runs.Put(key, data)
}

// GetRun returns run id, or an error wrapping ErrNotFound if there is none.
func (s *Store) GetRun(id uint64) (*Run, error) {
	if s != nil && s.pg != nil {
		r, err := s.pg.getRun(id)
		if err != nil {
			return nil, s.errorf(err, "get run %d", id)
		}
		return r, nil
	}
	var r *Run
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		r, err = getRun(tx, id)
		return err
	})
	if err != nil {
		return nil, s.errorf(err, "get run %d", id)
	}
	return r, nil
}

// getRun reads run id; ErrNotFound if absent.
func getRun(tx *bolt.Tx, id uint64) (*Run, error) {
	data := tx.Bucket(bucketRuns).Get(itob(id))
	if data == nil {
		return nil, ErrNotFound
	}
	r := new(Run)
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("decode run record: %w", err)
	}
	return r, nil
}

// LatestRun returns the run most recently created by CreateRun, or (nil, nil)
// when the file holds no runs.
func (s *Store) LatestRun() (*Run, error) {
	if s != nil && s.pg != nil {
		r, err := s.pg.latestRun()
		if err != nil {
			return nil, s.errorf(err, "get latest run")
		}
		return r, nil
	}
	var r *Run
	err := s.view(func(tx *bolt.Tx) error {
		key := tx.Bucket(bucketMeta).Get(keyLatest)
		if key == nil {
			return nil
		}
		if len(key) != 8 {
			return fmt.Errorf("invalid latest run key %x", key)
		}
		var err error
		r, err = getRun(tx, binary.BigEndian.Uint64(key))
		return err
	})
	if err != nil {
		return nil, s.errorf(err, "get latest run")
	}
	return r, nil
}

// Runs returns every run, oldest (lowest id) first; none is an empty result
// and a nil error.
func (s *Store) Runs() ([]*Run, error) {
	if s != nil && s.pg != nil {
		runs, err := s.pg.runs()
		if err != nil {
			return nil, s.errorf(err, "list runs")
		}
		return runs, nil
	}
	var runs []*Run
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRuns).ForEach(func(k, v []byte) error {
			r := new(Run)
			if err := json.Unmarshal(v, r); err != nil {
				return fmt.Errorf("decode run record %x: %w", k, err)
			}
			runs = append(runs, r)
			return nil
		})
	})
	if err != nil {
		return nil, s.errorf(err, "list runs")
	}
	return runs, nil
}
