// Command flow-plugin-http is a flow plugin serving the http task type: call an HTTP
// endpoint, or wait for it, with a method, headers, a body, the status expected, a
// value read from a JSON path of the response, and retries by status class.
//
// Build it next to a flow and name it in a plugin block (docs/plugins.md):
//
//	plugin "http" { source = "./flow-plugin-http" }
//
// plugins/ holds plugins, bundled and examples; the protocol, host and SDK they are
// served through are plugin/'s.
package main

import pluginserver "github.com/flowdev/flow/plugin/server"

func main() { pluginserver.Serve(Register) }
