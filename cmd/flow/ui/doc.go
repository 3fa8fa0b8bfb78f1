// Package ui serves `flow ui`: a read-only web page of a state file's runs — the live
// graph of a run, its timeline and the history of every run — with every asset
// embedded in the binary (no network at run time, no build step: the page is plain
// hand-written HTML, CSS, JavaScript and SVG).
//
// It owns the HTTP server, its JSON documents and the page; it does not own where the
// records come from (a Source: the CLI reads the state file, or asks the running flow
// process holding it) nor what they contain: a Source hands over records already
// redacted as logs are, and the documents carry no task outputs or inputs.
package ui
