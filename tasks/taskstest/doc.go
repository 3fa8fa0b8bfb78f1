// Package taskstest owns the helpers that every task family's tests share: a table
// runner for Validate, checks of a type's registration and example, and a test Env
// whose output is collected in a goroutine-safe Buffer.
//
// It is imported only by _test files; nothing in the flow binary depends on it.
package taskstest
