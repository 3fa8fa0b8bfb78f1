//go:build !linux

package pagecache

func unsynced(string) (uint64, error) { return 0, ErrUnsupported }

func observable(string) error { return ErrUnsupported }
