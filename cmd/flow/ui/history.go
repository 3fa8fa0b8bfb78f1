package ui

import (
	"net/http"
	"sort"
	"strings"
)

// History is every run and, per task, how long it took in each run: the span from
// its first instance's start to its last one's finish.
type History struct {
	Runs  []Run         `json:"runs"`
	Tasks []TaskHistory `json:"tasks"`
}

// TaskHistory is one task's duration across runs, oldest run first.
type TaskHistory struct {
	Task      string     `json:"task"`
	Durations []TaskSpan `json:"durations"`
}

// TaskSpan is a task's duration in one run.
type TaskSpan struct {
	Run     uint64  `json:"run"`
	Seconds float64 `json:"seconds"`
}

func (s *Server) history(w http.ResponseWriter, _ *http.Request) {
	h, err := s.readHistory()
	writeJSON(w, h, err)
}

func (s *Server) readHistory() (*History, error) {
	runs, err := s.src.Runs()
	if err != nil {
		return nil, err
	}
	h := &History{Runs: runs, Tasks: []TaskHistory{}}
	if h.Runs == nil {
		h.Runs = []Run{}
	}
	byTask := map[string]*TaskHistory{}
	for _, r := range runs {
		d, err := s.src.Detail(r.ID)
		if err != nil {
			return nil, err
		}
		for task, secs := range taskSpans(d.Instances) {
			th := byTask[task]
			if th == nil {
				th = &TaskHistory{Task: task}
				byTask[task] = th
			}
			th.Durations = append(th.Durations, TaskSpan{Run: r.ID, Seconds: secs})
		}
	}
	for _, th := range byTask {
		h.Tasks = append(h.Tasks, *th)
	}
	sort.Slice(h.Tasks, func(i, j int) bool { return h.Tasks[i].Task < h.Tasks[j].Task })
	return h, nil
}

// taskSpans is, per task with a finished instance, the seconds from its first
// instance's start to its last one's finish.
func taskSpans(insts []Instance) map[string]float64 {
	type span struct{ first, last int64 }
	spans := map[string]*span{}
	for _, in := range insts {
		if in.StartedAt == nil || in.FinishedAt == nil {
			continue
		}
		task := TaskOf(in.Address)
		s, a, b := spans[task], in.StartedAt.UnixNano(), in.FinishedAt.UnixNano()
		if len(in.Tries) > 0 { // from its first attempt
			a = in.Tries[0].StartedAt.UnixNano()
		}
		if s == nil {
			spans[task] = &span{a, b}
			continue
		}
		s.first, s.last = min(s.first, a), max(s.last, b)
	}
	out := make(map[string]float64, len(spans))
	for task, s := range spans {
		out[task] = float64(s.last-s.first) / 1e9
	}
	return out
}

// TaskOf is the task an instance address belongs to: the address without the
// instance key of its last part (`module.m["a"].exec.x["k"]` is `module.m["a"].exec.x`).
func TaskOf(addr string) string {
	if !strings.HasSuffix(addr, "]") {
		return addr
	}
	// The key is the last bracket that starts outside quotes.
	inQuote, open := false, -1
	for i := 0; i < len(addr); i++ {
		switch c := addr[i]; {
		case c == '\\' && inQuote:
			i++
		case c == '"':
			inQuote = !inQuote
		case c == '[' && !inQuote:
			open = i
		case c == '.' && !inQuote:
			open = -1
		}
	}
	if open < 0 {
		return addr
	}
	return addr[:open]
}
