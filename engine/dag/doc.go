// Package dag provides a small generic directed graph for the task engine.
//
// It owns the graph structure (vertices and "depends on" edges), a
// deterministic dependency ordering (TopoOrder) and cycle detection
// (Cycles, CycleError). Everything runs in O(V+E) or O((V+E) log V) and is
// iterative, so graphs with tens of thousands of vertices and long
// dependency chains are fine.
//
// It does not know what a vertex means (the engine uses task instance
// addresses such as exec.build["member1"], but any cmp.Ordered key works),
// and it does not schedule or run anything: callers decide what to do with
// an order or a cycle.
package dag
