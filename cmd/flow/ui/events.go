package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
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
	var last *Detail
	var known map[string]*Instance
	for {
		began := time.Now()
		d, err := s.read(id)
		wait := pause(s.Every, time.Since(began))
		switch {
		case err != nil:
			send(w, "problem", err.Error())
		case last == nil || d.Run.ID != last.Run.ID:
			send(w, "run", d)
			known = index(d.Instances)
		default:
			if u := changes(last, d, known); u != nil {
				send(w, "update", u)
			}
		}
		if err == nil {
			last = d
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(wait):
		}
	}
}

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
