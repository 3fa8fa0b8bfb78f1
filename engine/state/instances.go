package state

import (
	"encoding/json"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Instances returns the instance records of run runID sorted by address
// (byte-wise), or an error wrapping ErrNotFound if there is no such run. A
// run without instances yields an empty result and a nil error.
func (s *Store) Instances(runID uint64) ([]*Instance, error) {
	if s != nil && s.pg != nil {
		out, err := s.pg.instances(runID)
		if err != nil {
			return nil, s.errorf(err, "read instances of run %d", runID)
		}
		return out, nil
	}
	var out []*Instance
	err := s.view(func(tx *bolt.Tx) error {
		b, err := runBucket(tx, runID, bucketInstances)
		if err != nil {
			return err
		}
		out = []*Instance{}
		return b.ForEach(func(k, v []byte) error {
			in := new(Instance)
			if err := json.Unmarshal(v, in); err != nil {
				return fmt.Errorf("decode instance %q: %w", k, err)
			}
			out = append(out, in)
			return nil
		})
	})
	if err != nil {
		return nil, s.errorf(err, "read instances of run %d", runID)
	}
	return out, nil
}

// Logs returns the captured output stored for address in run runID, or
// (nil, nil) if none is stored. It returns an error wrapping ErrNotFound if
// there is no such run.
func (s *Store) Logs(runID uint64, address string) ([]byte, error) {
	if s != nil && s.pg != nil {
		out, err := s.pg.logs(runID, address)
		if err != nil {
			return nil, s.errorf(err, "read log of %q in run %d", address, runID)
		}
		return out, nil
	}
	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		b, err := runBucket(tx, runID, bucketLogs)
		if err != nil {
			return err
		}
		if v := b.Get([]byte(address)); v != nil {
			out = append([]byte(nil), v...) // v is only valid during the transaction
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf(err, "read log of %q in run %d", address, runID)
	}
	return out, nil
}

// keyed is one value to put, under its key.
type keyed struct {
	key  string
	data []byte
}

func (a keyed) compare(b keyed) int { return strings.Compare(a.key, b.key) }
