package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// This file checks the page structure of a bbolt file by reading it (never
// through bbolt's memory map), so that a corrupt file is detected before
// bbolt walks it. bbolt trusts page contents: a wild offset in a page makes
// it read memory outside the file, which crashes the process when it happens
// in one of bbolt's own goroutines (tx.Check, and the freelist rebuild of
// every writable open when the freelist is not synced). After structure
// passes, every page and element bbolt follows lies within the file and
// bbolt finds nothing to panic about.
//
// The layout is bbolt's file format version 2 (see go.etcd.io/bbolt's
// internal/common): structs written in native byte order.
const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	branchElemSize   = 16 // pos u32, ksize u32, pgid u64
	leafElemSize     = 16 // flags u32, pos u32, ksize u32, vsize u32
	bucketHeader     = 16 // root pgid u64, sequence u64
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	bucketLeafFlag   = 0x01
	maxBucketNesting = 64 // flow nests 3 deep; anything near this is corrupt
)

var ne = binary.NativeEndian

// structure checks every page reachable from the root bucket whose root page
// is root: each lies below the high water mark hwm (in pages of pageSize
// bytes), is referenced once, is a branch or leaf page naming its own id, all
// its elements, keys and values lie within it, and keys are in order through
// each bucket's tree. These are the invariants bbolt's freelist rebuild
// checks (and panics over, in a goroutine it does not wait for).
func structure(r io.ReaderAt, pageSize int, hwm, root uint64) error {
	c := &checker{r: r, pageSize: uint64(pageSize), hwm: hwm, seen: make([]uint64, (hwm+63)/64)}
	_, err := c.page(root, nil, nil, 0)
	return err
}

type checker struct {
	r        io.ReaderAt
	pageSize uint64
	hwm      uint64
	seen     []uint64 // bit set of pages visited
	free     [][]byte // buffers for reuse
}

// buffer returns a buffer of n bytes, reusing a released one if possible.
func (c *checker) buffer(n uint64) []byte {
	for i := len(c.free) - 1; i >= 0; i-- {
		if b := c.free[i]; uint64(cap(b)) >= n {
			c.free = append(c.free[:i], c.free[i+1:]...)
			return b[:n]
		}
	}
	return make([]byte, n)
}

func (c *checker) release(b []byte) {
	if len(c.free) < 16 {
		c.free = append(c.free, b)
	}
}

// read reads page id with its overflow pages into a buffer from c.buffer.
func (c *checker) read(id uint64) ([]byte, error) {
	buf := c.buffer(c.pageSize)
	if _, err := c.r.ReadAt(buf, int64(id*c.pageSize)); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	if got := ne.Uint64(buf[0:]); got != id {
		return nil, fmt.Errorf("page %d identifies as page %d", id, got)
	}
	overflow := uint64(ne.Uint32(buf[12:]))
	if id+overflow >= c.hwm {
		return nil, fmt.Errorf("page %d overflows beyond the high water mark", id)
	}
	for i := id; i <= id+overflow; i++ {
		if c.seen[i/64]&(1<<(i%64)) != 0 {
			return nil, fmt.Errorf("page %d is referenced twice", i)
		}
		c.seen[i/64] |= 1 << (i % 64)
	}
	if overflow > 0 {
		c.release(buf)
		buf = c.buffer((overflow + 1) * c.pageSize)
		if _, err := c.r.ReadAt(buf, int64(id*c.pageSize)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", id, err)
		}
	}
	return buf, nil
}

// page checks page id of a bucket at nesting depth and the pages below it,
// whose keys must lie in [minKey, maxKey) (nil: unbounded). It returns (a
// copy of) the largest key below it, as bbolt's check does.
func (c *checker) page(id uint64, minKey, maxKey []byte, depth int) (maxInSubtree []byte, err error) {
	if id < 2 || id >= c.hwm {
		return nil, fmt.Errorf("page %d is out of bounds (high water mark %d)", id, c.hwm)
	}
	buf, err := c.read(id)
	if err != nil {
		return nil, err
	}
	defer func() {
		if buf != nil {
			c.release(buf)
		}
	}()
	p := pageView(buf)
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	running := minKey
	n := p.count()
	if p.flags() == branchPageFlag {
		for i := range n {
			key := p.branchKey(i)
			if err := keyOrder(i, key, running, maxKey); err != nil {
				return nil, fmt.Errorf("page %d: %w", id, err)
			}
			next := maxKey
			if i+1 < n {
				next = p.branchKey(i + 1)
			}
			if running, err = c.page(p.branchChild(i), key, next, depth); err != nil {
				return nil, err
			}
		}
		return running, nil
	}
	var buckets [][]byte
	for i := range n {
		key, value, isBucket := p.leaf(i)
		if err := keyOrder(i, key, running, maxKey); err != nil {
			return nil, fmt.Errorf("page %d: %w", id, err)
		}
		running = key
		if isBucket {
			buckets = append(buckets, bytes.Clone(value))
		}
	}
	if n > 0 {
		maxInSubtree = bytes.Clone(running)
	}
	c.release(buf) // not needed any more while checking nested buckets
	buf = nil
	return maxInSubtree, c.buckets(buckets, depth)
}

// keyOrder checks the key of element i of a page, given the key before it
// (or the lower bound, for i == 0) and the exclusive upper bound.
func keyOrder(i int, key, prev, maxKey []byte) error {
	switch {
	case i == 0 && prev != nil && bytes.Compare(prev, key) > 0:
		return fmt.Errorf("key %d is below its lower bound", i)
	case i > 0 && bytes.Compare(prev, key) >= 0:
		return fmt.Errorf("key %d is out of order", i)
	case maxKey != nil && bytes.Compare(key, maxKey) >= 0:
		return fmt.Errorf("key %d is not below its upper bound", i)
	}
	return nil
}

// buckets checks the nested buckets whose headers (leaf values) are given.
func (c *checker) buckets(values [][]byte, depth int) error {
	if len(values) > 0 && depth >= maxBucketNesting {
		return fmt.Errorf("buckets nested more than %d deep", maxBucketNesting)
	}
	for _, v := range values {
		if len(v) < bucketHeader {
			return fmt.Errorf("bucket header of %d bytes", len(v))
		}
		if root := ne.Uint64(v); root != 0 {
			if _, err := c.page(root, nil, nil, depth+1); err != nil {
				return err
			}
			continue
		}
		// An inline bucket: its single leaf page follows the header.
		// (bbolt does not check inside inline buckets; only bounds matter.)
		p := pageView(v[bucketHeader:])
		if len(p) < pageHeaderSize {
			return fmt.Errorf("inline bucket of %d bytes", len(p))
		}
		if p.flags() != leafPageFlag {
			return fmt.Errorf("inline bucket page has flags %#x", p.flags())
		}
		if err := p.check(); err != nil {
			return fmt.Errorf("inline bucket: %w", err)
		}
		var nested [][]byte
		for i := range p.count() {
			if _, value, isBucket := p.leaf(i); isBucket {
				nested = append(nested, value)
			}
		}
		if err := c.buckets(nested, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// pageView reads a branch or leaf page (with its overflow pages).
type pageView []byte

func (p pageView) flags() uint16 { return ne.Uint16(p[8:]) }
func (p pageView) count() int    { return int(ne.Uint16(p[10:])) }

// check checks that the page is a branch or leaf page whose elements, keys
// and values lie within it; only then may the accessors below be used.
func (p pageView) check() error {
	size, count := uint64(len(p)), uint64(p.count())
	switch p.flags() {
	case branchPageFlag:
		if count == 0 {
			return fmt.Errorf("empty branch page")
		}
		if pageHeaderSize+count*branchElemSize > size {
			return fmt.Errorf("%d elements do not fit", count)
		}
		for i := range count {
			e := pageHeaderSize + i*branchElemSize
			if e+uint64(ne.Uint32(p[e:]))+uint64(ne.Uint32(p[e+4:])) > size {
				return fmt.Errorf("element %d lies outside the page", i)
			}
		}
	case leafPageFlag:
		if pageHeaderSize+count*leafElemSize > size {
			return fmt.Errorf("%d elements do not fit", count)
		}
		for i := range count {
			e := pageHeaderSize + i*leafElemSize
			if e+uint64(ne.Uint32(p[e+4:]))+uint64(ne.Uint32(p[e+8:]))+uint64(ne.Uint32(p[e+12:])) > size {
				return fmt.Errorf("element %d lies outside the page", i)
			}
		}
	default:
		return fmt.Errorf("unexpected page type %#x", p.flags())
	}
	return nil
}

func (p pageView) branchKey(i int) []byte {
	e := pageHeaderSize + i*branchElemSize
	start := e + int(ne.Uint32(p[e:]))
	return p[start : start+int(ne.Uint32(p[e+4:]))]
}

func (p pageView) branchChild(i int) uint64 {
	return ne.Uint64(p[pageHeaderSize+i*branchElemSize+8:])
}

func (p pageView) leaf(i int) (key, value []byte, isBucket bool) {
	e := pageHeaderSize + i*leafElemSize
	start := e + int(ne.Uint32(p[e+4:]))
	ksize, vsize := int(ne.Uint32(p[e+8:])), int(ne.Uint32(p[e+12:]))
	return p[start : start+ksize], p[start+ksize : start+ksize+vsize], ne.Uint32(p[e:])&bucketLeafFlag != 0
}
