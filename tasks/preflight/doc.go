// Package preflight holds the preflight task type: checks, before a lab creates
// anything, that the host has what the lab needs (access to LXD, its storage, room
// for privileged and nested containers, free host ports, disk, memory, a CNI
// configuration Karmada's etcd can live with), and reports every problem in one
// message of its own.
//
// It owns reading /proc for listening sockets and their processes. It changes
// nothing: it never stops a process or touches an instance, it only names them.
package preflight
