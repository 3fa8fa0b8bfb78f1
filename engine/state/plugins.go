package state

// Plugin is a plugin executable a run used: the name its flow gave it, the path it
// was found at, its sha256 when the run (or its latest resume) started, and the
// task types it served.
type Plugin struct {
	Name   string   `json:"name"`
	Path   string   `json:"path"`
	Sha256 string   `json:"sha256"`
	Types  []string `json:"types,omitempty"`
}
