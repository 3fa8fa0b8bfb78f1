package live

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// ownerOnly accepts connections only from the user the flow process runs as, or
// root: an abstract socket has no file mode, so without this any local user could read
// a run's status and its tasks' output. Others are closed unanswered, and see
// ErrNotServing.
type ownerOnly struct {
	net.Listener
	uid int
}

func newOwnerOnly(ln net.Listener) net.Listener { return ownerOnly{Listener: ln, uid: os.Geteuid()} }

func (l ownerOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if uid, ok := peerUID(c); ok && (uid == l.uid || uid == 0) {
			return c, nil
		}
		c.Close()
	}
}

// peerUID is the user of the process at the other end of c (SO_PEERCRED).
func peerUID(c net.Conn) (int, bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return 0, false
	}
	return int(cred.Uid), true
}
