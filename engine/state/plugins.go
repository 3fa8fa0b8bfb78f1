package state

import "github.com/flowdev/flow/tasks"

// Plugin is a plugin executable a run used: the name its flow gave it, the path it
// was found at, its sha256 when the run (or its latest resume) started, and the
// task types it served. It is what the plugin loader reported, recorded as it is, so
// the two cannot drift apart.
type Plugin = tasks.PluginUse
