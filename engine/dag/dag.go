package dag

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// set is a set of vertices; nil means empty (allocated on first edge).
type set[K cmp.Ordered] map[K]struct{}

// Graph is a directed graph where an edge from a to b means "a depends on b".
//
// The zero value is not usable; call New. A Graph is not safe for concurrent
// mutation, but once it is built any number of goroutines may read it
// concurrently (read methods never modify it). All methods that return
// vertices return them in a deterministic (sorted) order.
type Graph[K cmp.Ordered] struct {
	deps       map[K]set[K] // v -> what v depends on; every vertex is a key
	dependents map[K]set[K] // v -> what depends on v
}

// New returns an empty graph.
func New[K cmp.Ordered]() *Graph[K] {
	return &Graph[K]{deps: map[K]set[K]{}, dependents: map[K]set[K]{}}
}

// Add adds vertex v. Adding an existing vertex is a no-op.
func (g *Graph[K]) Add(v K) {
	if _, ok := g.deps[v]; !ok {
		g.deps[v] = nil
	}
}

// Connect records that from depends on to, adding missing vertices.
// Connecting the same pair twice is a no-op. A self-edge (from == to) is
// allowed and counts as a cycle.
func (g *Graph[K]) Connect(from, to K) {
	g.Add(from)
	g.Add(to)
	if g.deps[from] == nil {
		g.deps[from] = set[K]{}
	}
	g.deps[from][to] = struct{}{}
	if g.dependents[to] == nil {
		g.dependents[to] = set[K]{}
	}
	g.dependents[to][from] = struct{}{}
}

// Has reports whether v is a vertex of g.
func (g *Graph[K]) Has(v K) bool {
	_, ok := g.deps[v]
	return ok
}

// Len returns the number of vertices.
func (g *Graph[K]) Len() int { return len(g.deps) }

// Vertices returns all vertices, sorted.
func (g *Graph[K]) Vertices() []K { return slices.Sorted(maps.Keys(g.deps)) }

// DependsOn returns the direct dependencies of v, sorted (nil if none or if
// v is not in the graph).
func (g *Graph[K]) DependsOn(v K) []K { return sortedSet(g.deps[v]) }

// Dependents returns the vertices that directly depend on v, sorted (nil if
// none or if v is not in the graph).
func (g *Graph[K]) Dependents(v K) []K { return sortedSet(g.dependents[v]) }

func sortedSet[K cmp.Ordered](s set[K]) []K {
	if len(s) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(s))
}

// String renders the graph deterministically: one line per vertex in sorted
// order, each followed by its sorted dependencies indented by two spaces.
// Every line ends in a newline; an empty graph renders as "".
func (g *Graph[K]) String() string {
	var b strings.Builder
	for _, v := range g.Vertices() {
		fmt.Fprintf(&b, "%v\n", v)
		for _, d := range g.DependsOn(v) {
			fmt.Fprintf(&b, "  %v\n", d)
		}
	}
	return b.String()
}

// indexed is a dense snapshot of the graph: vertex i is verts[i], and since
// verts is sorted, comparing ids compares vertices. Algorithms work on it so
// they only sort once and avoid map lookups in inner loops.
type indexed[K cmp.Ordered] struct {
	verts      []K
	deps       [][]int // sorted ascending
	dependents [][]int // sorted ascending
}

func (g *Graph[K]) index() indexed[K] {
	verts := g.Vertices()
	id := make(map[K]int, len(verts))
	for i, v := range verts {
		id[v] = i
	}
	ids := func(s set[K]) []int {
		out := make([]int, 0, len(s))
		for k := range s {
			out = append(out, id[k])
		}
		slices.Sort(out)
		return out
	}
	x := indexed[K]{
		verts:      verts,
		deps:       make([][]int, len(verts)),
		dependents: make([][]int, len(verts)),
	}
	for i, v := range verts {
		x.deps[i] = ids(g.deps[v])
		x.dependents[i] = ids(g.dependents[v])
	}
	return x
}

// TopoOrder returns all vertices with every vertex after all of its
// dependencies. The order is deterministic: whenever several vertices are
// ready, the smallest comes first. If the graph has a cycle, TopoOrder
// returns nil and a *CycleError listing every cycle.
func (g *Graph[K]) TopoOrder() ([]K, error) {
	x := g.index()
	n := len(x.verts)
	pending := make([]int, n) // unmet dependencies per vertex
	ready := &minHeap{}
	for i := range n {
		pending[i] = len(x.deps[i])
		if pending[i] == 0 {
			*ready = append(*ready, i)
		}
	}
	heap.Init(ready)
	order := make([]K, 0, n)
	for ready.Len() > 0 {
		v := heap.Pop(ready).(int)
		order = append(order, x.verts[v])
		for _, d := range x.dependents[v] {
			if pending[d]--; pending[d] == 0 {
				heap.Push(ready, d)
			}
		}
	}
	if len(order) < n {
		// Vertices on or behind a cycle never become ready.
		return nil, &CycleError[K]{Cycles: x.cycles()}
	}
	return order, nil
}

// Cycles returns every cycle of the graph: each strongly connected
// component with more than one vertex, or a single vertex with a self-edge.
//
// Each cycle lists its members in a stable order independent of insertion
// order: it starts at the smallest member and continues with a pre-order
// depth-first walk inside the component that always takes the smallest
// unvisited dependency first. For a simple cycle that is exactly the cycle's
// order. The cycles are sorted by their first element. Cycles returns nil for
// an acyclic graph.
func (g *Graph[K]) Cycles() [][]K { return g.index().cycles() }

func (x indexed[K]) cycles() [][]K {
	comp, ncomp := x.scc()
	n := len(x.verts)
	size := make([]int, ncomp)
	for _, c := range comp {
		size[c]++
	}
	var out [][]K
	visited := make([]bool, n)
	// Walking ids in ascending order meets each component first at its
	// smallest member, so cycles come out sorted by first element.
	for s := range n {
		if visited[s] {
			continue
		}
		if size[comp[s]] == 1 && !slices.Contains(x.deps[s], s) {
			continue
		}
		out = append(out, x.walk(s, comp, visited))
	}
	return out
}

// walk is an iterative pre-order DFS from start restricted to start's
// component, taking the smallest unvisited dependency first.
func (x indexed[K]) walk(start int, comp []int, visited []bool) []K {
	type frame struct{ v, next int }
	visited[start] = true
	members := []K{x.verts[start]}
	stack := []frame{{v: start}}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.next == len(x.deps[f.v]) {
			stack = stack[:len(stack)-1]
			continue
		}
		w := x.deps[f.v][f.next]
		f.next++
		if !visited[w] && comp[w] == comp[start] {
			visited[w] = true
			members = append(members, x.verts[w])
			stack = append(stack, frame{v: w})
		}
	}
	return members
}

// scc labels every vertex with its strongly connected component using
// Tarjan's algorithm, iteratively so long chains cannot overflow the stack.
// It returns each vertex's component number and the number of components.
func (x indexed[K]) scc() (comp []int, ncomp int) {
	n := len(x.verts)
	const unvisited = -1
	index := make([]int, n)
	low := make([]int, n)
	comp = make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unvisited
	}
	var stack []int // Tarjan's vertex stack
	type frame struct{ v, next int }
	var calls []frame // replaces the recursion
	counter := 0

	visit := func(v int) {
		index[v], low[v] = counter, counter
		counter++
		stack = append(stack, v)
		onStack[v] = true
		calls = append(calls, frame{v: v})
	}
	for root := range n {
		if index[root] != unvisited {
			continue
		}
		visit(root)
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.next < len(x.deps[v]) {
				w := x.deps[v][f.next]
				f.next++
				if index[w] == unvisited {
					visit(w)
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = ncomp
					if w == v {
						break
					}
				}
				ncomp++
			}
		}
	}
	return comp, ncomp
}

// CycleError reports that a graph has cycles, in the order of Graph.Cycles.
type CycleError[K cmp.Ordered] struct{ Cycles [][]K }

// Error renders each cycle as "cycle: a -> b -> c -> a" (the first vertex is
// repeated to close the loop), joining several cycles with "; ".
func (e *CycleError[K]) Error() string {
	if len(e.Cycles) == 0 {
		return "cycle"
	}
	parts := make([]string, len(e.Cycles))
	for i, c := range e.Cycles {
		var b strings.Builder
		b.WriteString("cycle: ")
		for _, v := range c {
			fmt.Fprintf(&b, "%v -> ", v)
		}
		if len(c) > 0 {
			fmt.Fprintf(&b, "%v", c[0])
		}
		parts[i] = b.String()
	}
	return strings.Join(parts, "; ")
}

// minHeap is a container/heap of vertex ids; smallest id = smallest vertex.
type minHeap []int

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(v any)        { *h = append(*h, v.(int)) }
func (h *minHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
