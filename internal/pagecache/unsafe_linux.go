package pagecache

import "unsafe"

// unsafePointer is the address of b's first byte: where a mapping starts.
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
