package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Commit stores, in one durable transaction, the given instance records of
// run runID (each replacing any record with the same address), the captured
// logs (address -> output, each replacing the stored log; a nil or empty
// slice deletes it; a log longer than MaxLogSize keeps only its last
// MaxLogSize bytes) and, if run is not nil, the run record, whose ID must be
// runID.
//
// Commit is all or nothing: if it returns an error, nothing of it was
// stored and the state is exactly as before the call. Records are checked
// (non-empty addresses, well-formed Values) before anything is written.
// Commit returns an error wrapping ErrNotFound if run runID does not exist.
// It does not retain instances or logs after it returns.
func (s *Store) Commit(runID uint64, run *Run, instances []*Instance, logs map[string][]byte) error {
	if err := s.commit(runID, run, instances, logs); err != nil {
		return s.errorf(err, "commit run %d", runID)
	}
	return nil
}

func (s *Store) commit(runID uint64, run *Run, instances []*Instance, logs map[string][]byte) error {
	// Check and encode everything before starting the transaction.
	if run != nil {
		if err := run.check(); err != nil {
			return err
		}
		if run.ID != runID {
			return fmt.Errorf("run record has id %d", run.ID)
		}
	}
	records := make([]keyed, len(instances))
	for i, in := range instances {
		if err := in.check(); err != nil {
			return err
		}
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("instance %q: %w", in.Address, err)
		}
		records[i] = keyed{in.Address, data}
	}
	logged := make([]keyed, 0, len(logs))
	for addr, data := range logs {
		if addr == "" {
			return errors.New("log with empty address")
		}
		logged = append(logged, keyed{addr, data})
	}
	// In key order: bbolt inserts a key into its page's node by shifting the keys
	// after it, so a first commit of 20,000 records in random order costs O(n²).
	slices.SortFunc(records, keyed.compare)
	slices.SortFunc(logged, keyed.compare)
	if s != nil && s.pg != nil {
		return s.pg.commit(runID, run, records, logged)
	}

	return s.update(func(tx *bolt.Tx) error {
		key := itob(runID)
		rb := tx.Bucket(bucketRun).Bucket(key)
		if rb == nil || tx.Bucket(bucketRuns).Get(key) == nil {
			return ErrNotFound
		}
		ib, lb := rb.Bucket(bucketInstances), rb.Bucket(bucketLogs)
		if ib == nil || lb == nil {
			return fmt.Errorf("run %d has no instances or logs bucket", runID)
		}
		for _, r := range records {
			if err := ib.Put([]byte(r.key), r.data); err != nil {
				return fmt.Errorf("instance %q: %w", r.key, err)
			}
		}
		for _, l := range logged {
			var err error
			if data := l.data; len(data) == 0 {
				err = lb.Delete([]byte(l.key))
			} else {
				if len(data) > MaxLogSize {
					data = data[len(data)-MaxLogSize:]
				}
				err = lb.Put([]byte(l.key), data)
			}
			if err != nil {
				return fmt.Errorf("log of %q: %w", l.key, err)
			}
		}
		if run != nil {
			return putRun(tx, run)
		}
		return nil
	})
}

// runBucket returns the bucket of run id, or ErrNotFound.
func runBucket(tx *bolt.Tx, id uint64, name []byte) (*bolt.Bucket, error) {
	rb := tx.Bucket(bucketRun).Bucket(itob(id))
	if rb == nil {
		return nil, ErrNotFound
	}
	b := rb.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("run %d has no %s bucket", id, name)
	}
	return b, nil
}
