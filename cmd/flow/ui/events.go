package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// update is an events-stream message after the first: the run's record and the
// instances that changed since the last message.
type update struct {
	Run       Run        `json:"run"`
	Instances []Instance `json:"instances"`
	Live      bool       `json:"live"`
}

// events streams run ?run= (0: the latest, following a new run as it starts) as
// server-sent events: a "run" event with the whole Detail first (and again when the
// latest run is another one), then an "update" event whenever something changed, read
// from the Source every s.Every (longer when reading takes long, see pause) while the
// page is open. A Source error is sent as a "problem" event and the stream goes on.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	s.follow(r.Context(), id, func(event string, v any) error {
		send(w, event, v)
		flusher.Flush()
		return nil
	})
}

// live is the page's stream: the messages of events, each a JSON object
// {"event": ..., "data": ...}, over a WebSocket. A browser holds at most six HTTP/1.1
// connections to a host, and an events stream holds one for as long as its page is
// open: a seventh tab (or a reload while six are open) waited for one to close.
// WebSockets are not counted in that pool, so every tab follows the run.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	id, err := runID(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil) // refuses a page of another origin
	if err != nil {
		return // the upgrader answered
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// The page sends nothing; reading notices its close (a reload, a closed tab) at once
	// and answers pings.
	go func() {
		defer cancel()
		for {
			if _, _, err := conn.NextReader(); err != nil {
				return
			}
		}
	}()
	// A peer gone without a close (a sleeping laptop) is noticed by a ping unanswered.
	conn.SetPongHandler(func(string) error { return nil })
	s.follow(ctx, id, func(event string, v any) error {
		conn.SetWriteDeadline(time.Now().Add(writeWait))
		return conn.WriteJSON(message{Event: event, Data: v})
	})
}

// writeWait is how long a message may take to reach a page before its connection is
// dropped (the page connects again).
const writeWait = 15 * time.Second

var upgrader = websocket.Upgrader{ReadBufferSize: 512, WriteBufferSize: 16 << 10}

type message struct {
	Event string `json:"event"`
	Data  any    `json:"data"`
}

// follow sends run id (0: the latest, following a new run as it starts): a "run"
// message with the whole Detail first (and again when the latest run is another one),
// then an "update" whenever something changed, read from the Source every s.Every
// (longer when reading takes long, see pause) until ctx ends or a send fails. A Source
// error is sent as a "problem" and following goes on. While nothing changes it sends
// an empty "ping" every keepAlive, so a dead connection is found.
func (s *Server) follow(ctx context.Context, id uint64, emit func(event string, v any) error) {
	var last *Detail
	var known map[string]*Instance
	quiet := time.Now()
	for {
		began := time.Now()
		d, took, err := s.readShared(id)
		wait := pause(s.Every, max(took, time.Since(began)))
		var serr error
		sent := true
		switch {
		case err != nil:
			serr = emit("problem", err.Error())
		case last == nil || d.Run.ID != last.Run.ID:
			serr = emit("run", d)
			known = index(d.Instances)
		default:
			if u := changes(last, d, known); u != nil {
				serr = emit("update", u)
			} else if time.Since(quiet) >= keepAlive {
				serr = emit("ping", nil)
			} else {
				sent = false
			}
		}
		if serr != nil {
			return
		}
		if sent {
			quiet = time.Now()
		}
		if err == nil {
			last = d
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// readShared is s.read(id) as every stream shares it: a read younger than s.Every is
// the answer, and a stream that asks while one is under way waits for it. Twenty tabs
// open on a run cost the running process one read per period, as one tab does, not
// twenty; what a tab shows is then at most two periods old.
// took is how long the read took (for pause).
func (s *Server) readShared(id uint64) (*Detail, time.Duration, error) {
	s.sharedMu.Lock()
	r := s.shared[id]
	if r == nil {
		r = &sharedRead{}
		s.shared[id] = r
	}
	s.sharedMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at.IsZero() || time.Since(r.at) >= s.Every {
		began := time.Now()
		r.d, r.err = s.read(id)
		r.took = time.Since(began)
		r.at = time.Now()
	}
	return r.d, r.took, r.err
}

// sharedRead is the latest read of one run id (0: the latest run) by the streams.
type sharedRead struct {
	mu   sync.Mutex
	at   time.Time
	d    *Detail
	err  error
	took time.Duration
}

// keepAlive is how often a stream with nothing to say sends a ping.
const keepAlive = 20 * time.Second

// pause is how long the stream waits before it reads again: every, or when a read
// took long (a run of many thousands of instances, asked of the process running it),
// dutyCycle times that, so an open page keeps its share of the run's time small.
func pause(every, took time.Duration) time.Duration {
	return max(every, took*dutyCycle)
}

// dutyCycle bounds the share of time the stream spends reading to 1 in 20.
const dutyCycle = 20

func index(insts []Instance) map[string]*Instance {
	m := make(map[string]*Instance, len(insts))
	for i := range insts {
		m[insts[i].Address] = &insts[i]
	}
	return m
}

// changes is the update from last to d (the same run), or nil when nothing changed;
// known, last's instances by address, is brought up to d.
func changes(last, d *Detail, known map[string]*Instance) *update {
	u := &update{Run: d.Run, Live: d.Live, Instances: []Instance{}}
	for i := range d.Instances {
		in := &d.Instances[i]
		if k, ok := known[in.Address]; !ok || !same(k, in) {
			u.Instances = append(u.Instances, *in)
			known[in.Address] = in
		}
	}
	if len(u.Instances) == 0 && d.Run.Status == last.Run.Status && d.Live == last.Live && timeEq(d.Run.FinishedAt, last.Run.FinishedAt) {
		return nil
	}
	return u
}

func send(w http.ResponseWriter, event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(err.Error())
		event = "problem"
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
}
