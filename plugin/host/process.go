// Package host runs task plugins for flow: it finds a plugin's executable, starts it
// with go-plugin (protocol plugin.ProtocolVersion, the executable's sha256 taken
// first), reads the schema of the types it serves and turns each into a tasks.Type
// whose tasks call the plugin over gRPC. A plugin that crashes, hangs or breaks the
// protocol fails the attempt that was using it, with its last stderr lines; the next
// call starts it again.
//
// A plugin runs in a process group of its own, and every process it starts is the
// task's: Close, a cancelled call the plugin does not end in time (CancelGrace) and
// KillPlugins (flow-plugin-host's answer to its death signal, so a SIGKILLed flow
// takes them along) end the whole group, not the plugin alone.
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/flowdev/flow/internal/procgroup"
	"github.com/flowdev/flow/plugin"
	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
)

// StartTimeout bounds how long a plugin may take to print its handshake.
var StartTimeout = 20 * time.Second

// Process is one plugin executable and the process that serves it, started on first
// use and again after it exited. It is safe for concurrent use.
type Process struct {
	Name   string // the plugin block's label
	Path   string // absolute path of the executable
	Sha256 string // hex digest of the executable when it was found
	// Dir is the working directory the process starts in: the run's, so the
	// relative paths its tasks name act there. "" means flow's.
	Dir string

	logger hclog.Logger
	tail   *tail // the stderr of the process started last

	mu      sync.Mutex
	client  *goplugin.Client
	rpc     pluginpb.TaskPluginClient
	version int    // the protocol version the running process speaks
	sockDir string // the directory of its socket
	group   group  // its process group
}

// group is the process group a plugin process leads: the plugin and whatever it
// started, tracked (procgroup.Track) until it is ended, so KillPlugins reaches it.
type group struct {
	pgid    int
	start   uint64 // the leader's start time: with pgid, this group and no later one
	untrack func()
}

// kill SIGKILLs what is left of the group: go-plugin kills the plugin process alone,
// and what it started would run on under PID 1.
func (g *group) kill() {
	if g.pgid == 0 {
		return
	}
	if procgroup.Survives(g.pgid, g.start) {
		_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	}
	g.untrack()
	*g = group{}
}

// conn returns a client of the running plugin process, starting it when none runs.
func (p *Process) conn() (pluginpb.TaskPluginClient, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil && !p.client.Exited() {
		return p.rpc, nil
	}
	p.stop()
	p.tail = &tail{} // a crash report names only the lines of the process that crashed
	root, err := sockets.acquire()
	if err != nil {
		return nil, fmt.Errorf("start plugin %q: %w", p.Name, err)
	}
	defer sockets.release()
	// The plugin makes its socket in a directory of its own (PLUGIN_UNIX_SOCKET_DIR),
	// which stop removes however the process ended: nothing is left in $TMPDIR.
	if p.sockDir, err = os.MkdirTemp(root, "plugin-"); err != nil {
		return nil, fmt.Errorf("start plugin %q: %w", p.Name, err)
	}
	cmd := exec.Command(p.Path)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), goplugin.EnvUnixSocketDir+"="+p.sockDir)
	setDeathSignal(cmd)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: plugin.VersionedPlugins(),
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env has it, with the socket directory last
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Managed:          true,
		Logger:           p.logger,
		Stderr:           p.tail,
		SyncStderr:       p.tail,
		SyncStdout:       io.Discard,
		StartTimeout:     StartTimeout,
	})
	p.client = client
	rpcClient, err := client.Client()
	if cmd.Process != nil {
		info, _ := procgroup.Inspect(cmd.Process.Pid)
		p.group = group{pgid: cmd.Process.Pid, start: info.Start, untrack: procgroup.Track(cmd.Process.Pid)}
	}
	if err != nil {
		p.stop()
		return nil, p.startError(err)
	}
	raw, err := rpcClient.Dispense(plugin.Name)
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("plugin %q (%s): %w", p.Name, p.Path, err)
	}
	p.rpc, p.version = raw.(pluginpb.TaskPluginClient), client.NegotiatedVersion()
	return p.rpc, nil
}

var (
	versionRE = regexp.MustCompile(`Plugin version: (\d+)`)
	strayRE   = regexp.MustCompile(`Unrecognized remote plugin message: (.*)`)
)

// startError says why the plugin did not start, in a line of its own, then its stderr:
// a plugin of another protocol version is named with the versions; one that exited
// or printed something else before its handshake is said so, without go-plugin's
// list of guesses.
func (p *Process) startError(err error) error {
	if m := versionRE.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("plugin %q (%s) speaks plugin protocol %s, this flow speaks %d to %d: rebuild it for protocol %d",
			p.Name, p.Path, m[1], plugin.MinProtocolVersion, plugin.ProtocolVersion, plugin.ProtocolVersion)
	}
	if interp := missingInterpreter(p.Path); interp != "" {
		return fmt.Errorf("start plugin %q (%s): its interpreter %s (its #! line) does not exist", p.Name, p.Path, interp)
	}
	why := err.Error()
	if m := strayRE.FindStringSubmatch(why); m != nil || strings.Contains(why, "exited before we could connect") {
		why = "it exited before its handshake"
		if m != nil && strings.TrimSpace(m[1]) != "" {
			why = fmt.Sprintf("it printed %q on stdout instead of its handshake (a plugin prints nothing else there)", strings.TrimSpace(m[1]))
		}
		return fmt.Errorf("start plugin %q (%s): %s%s", p.Name, p.Path, why, p.tail.lines())
	}
	return fmt.Errorf("start plugin %q (%s): %w%s", p.Name, p.Path, err, p.tail.lines())
}

// missingInterpreter is the interpreter path's #! line names when that interpreter
// does not exist ("" otherwise): exec then fails with ENOENT, which names the plugin
// rather than what is missing.
func missingInterpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return ""
	}
	if _, err := os.Stat(fields[0]); errors.Is(err, fs.ErrNotExist) {
		return fields[0]
	}
	return ""
}

// callError is what a failed call reports: when the process died (or the call broke
// the protocol), the plugin's last stderr lines.
func (p *Process) callError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("plugin %q: %s: %w", p.Name, what, ctx.Err())
	}
	p.mu.Lock()
	client, stderr := p.client, p.tail
	p.mu.Unlock()
	exited := false
	for deadline := time.Now().Add(2 * time.Second); client != nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if exited = client.Exited(); exited {
			time.Sleep(50 * time.Millisecond) // the stderr reader's last lines
			break
		}
	}
	if exited {
		return fmt.Errorf("plugin %q exited during %s: %w%s", p.Name, what, err, stderr.lines())
	}
	return fmt.Errorf("plugin %q: %s: %w%s", p.Name, what, err, stderr.lines())
}

// Kill ends the plugin process, if one runs.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop()
	sockets.tidy()
}

// stopGroup ends the process group of the plugin process serving now if it is pgid:
// SIGTERM, and SIGKILL after grace. A later call starts the plugin again.
func (p *Process) stopGroup(pgid int, grace time.Duration) {
	p.mu.Lock()
	current := p.group
	p.mu.Unlock()
	if pgid == 0 || current.pgid != pgid || !procgroup.Survives(current.pgid, current.start) {
		return
	}
	procgroup.Stop(pgid, grace)
}

// pgid is the process group of the plugin process serving now, 0 when none runs.
func (p *Process) pgid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.group.pgid
}

// stop ends the process (go-plugin's Shutdown, a kill 2 s later) and what it started,
// and removes its socket directory. The caller holds p.mu.
func (p *Process) stop() {
	if p.client != nil {
		p.client.Kill()
		p.client = nil
	}
	p.group.kill()
	if p.sockDir != "" {
		_ = os.RemoveAll(p.sockDir)
		p.sockDir = ""
	}
}

// tail keeps the last lines a plugin wrote to stderr.
type tail struct {
	mu      sync.Mutex
	partial []byte
	last    []string
	// calls are the output writers of the calls in flight: each stderr line of the
	// process goes to each (the process's stderr is one stream; with one call in
	// flight, the line is that call's).
	calls map[*callWriter]bool
}

// callWriter is a call's stderr, shared by the call's own output events and the
// process's stderr lines written while the call is in flight.
type callWriter struct {
	mu     sync.Mutex
	w      io.Writer
	broken bool
}

func (c *callWriter) Write(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken || c.w == nil {
		return
	}
	if _, err := c.w.Write(b); err != nil {
		c.broken = true
	}
}

// follow sends the process's stderr lines to c until the returned func is called.
func (t *tail) follow(c *callWriter) (stop func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == nil {
		t.calls = map[*callWriter]bool{}
	}
	t.calls[c] = true
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.calls, c)
	}
}

const tailLines = 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, b...)
	for {
		i := strings.IndexByte(string(t.partial), '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(t.partial[:i])); line != "" {
			t.last = append(t.last, line)
			for c := range t.calls {
				c.Write([]byte("plugin stderr: " + line + "\n"))
			}
		}
		t.partial = t.partial[i+1:]
	}
	if len(t.last) > tailLines {
		t.last = append([]string(nil), t.last[len(t.last)-tailLines:]...)
	}
	return len(b), nil
}

// lines is the tail as an error suffix: "; its last stderr lines:\n  ..." or "".
func (t *tail) lines() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.last
	if p := strings.TrimSpace(string(t.partial)); p != "" {
		last = append(append([]string(nil), last...), p)
	}
	if len(last) == 0 {
		return ""
	}
	return "; its last stderr lines:\n  " + strings.Join(last, "\n  ")
}

var errNoResult = errors.New("the plugin ended the stream without a result")

// NewProcess returns the plugin at path, named name, not started yet: Types starts
// it. Loader is how flow makes them; tests of a plugin may use this directly.
func NewProcess(name, path string, logger hclog.Logger) *Process {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Process{Name: name, Path: path, logger: logger, tail: &tail{}}
}
