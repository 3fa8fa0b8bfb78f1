package dag

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// build makes a string graph from "from", "to" pairs; a lone vertex can be
// added with from == "" (to is then the vertex).
func build(pairs ...[2]string) *Graph[string] {
	g := New[string]()
	for _, p := range pairs {
		if p[0] == "" {
			g.Add(p[1])
			continue
		}
		g.Connect(p[0], p[1])
	}
	return g
}

func e(from, to string) [2]string { return [2]string{from, to} }
func v(name string) [2]string     { return [2]string{"", name} }

func TestString(t *testing.T) {
	tests := []struct {
		name  string
		edges [][2]string
		want  string
	}{
		{"empty", nil, ""},
		{"single", [][2]string{v("a")}, "a\n"},
		{"spec example", [][2]string{e("a", "b"), e("a", "c"), e("c", "b")}, "a\n  b\n  c\nb\nc\n  b\n"},
		{"insertion order irrelevant", [][2]string{e("c", "b"), e("a", "c"), e("a", "b")}, "a\n  b\n  c\nb\nc\n  b\n"},
		{"self edge and isolated", [][2]string{v("z"), e("m", "m")}, "m\n  m\nz\n"},
		{"task addresses", [][2]string{e(`exec.build["member2"]`, `exec.build["member1"]`)},
			"exec.build[\"member1\"]\nexec.build[\"member2\"]\n  exec.build[\"member1\"]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := build(tt.edges...).String(); got != tt.want {
				t.Errorf("String() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	g := build(e("a", "c"), e("a", "b"), e("d", "b"), v("e"))
	if got, want := g.Vertices(), []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("Vertices() = %v, want %v", got, want)
	}
	if got, want := g.DependsOn("a"), []string{"b", "c"}; !slices.Equal(got, want) {
		t.Errorf("DependsOn(a) = %v, want %v", got, want)
	}
	if got, want := g.Dependents("b"), []string{"a", "d"}; !slices.Equal(got, want) {
		t.Errorf("Dependents(b) = %v, want %v", got, want)
	}
	if got := g.DependsOn("e"); len(got) != 0 {
		t.Errorf("DependsOn(e) = %v, want none", got)
	}
	if got := g.Dependents("missing"); len(got) != 0 {
		t.Errorf("Dependents(missing) = %v, want none", got)
	}
	if !g.Has("e") || g.Has("missing") {
		t.Errorf("Has: e=%v missing=%v", g.Has("e"), g.Has("missing"))
	}
}

func TestIdempotent(t *testing.T) {
	g := New[string]()
	g.Add("a")
	g.Add("a")
	g.Connect("a", "b")
	g.Connect("a", "b")
	g.Add("b") // must not drop b's edges or a's edge to b
	g.Add("a")
	if g.Len() != 2 {
		t.Errorf("Len() = %d, want 2", g.Len())
	}
	if got, want := g.String(), "a\n  b\nb\n"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := g.Dependents("b"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Dependents(b) = %v, want [a]", got)
	}
}

func TestTopoOrder(t *testing.T) {
	tests := []struct {
		name  string
		edges [][2]string
		want  []string
	}{
		{"empty", nil, []string{}},
		{"chain", [][2]string{e("a", "b"), e("b", "c")}, []string{"c", "b", "a"}},
		{"diamond", [][2]string{e("a", "b"), e("a", "c"), e("b", "d"), e("c", "d")}, []string{"d", "b", "c", "a"}},
		// Smallest ready vertex first, even if it was added last.
		{"disconnected", [][2]string{v("z"), v("y"), e("x", "w"), v("a")}, []string{"a", "w", "x", "y", "z"}},
		{"ready set grows", [][2]string{e("b", "a"), e("c", "z"), e("d", "b")}, []string{"a", "b", "d", "z", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build(tt.edges...)
			got, err := g.TopoOrder()
			if err != nil {
				t.Fatalf("TopoOrder() error: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("TopoOrder() = %v, want %v", got, tt.want)
			}
			assertTopo(t, g, got)
		})
	}
}

// assertTopo checks that order holds every vertex once, after its dependencies.
func assertTopo[K interface{ ~string | ~int }](t *testing.T, g *Graph[K], order []K) {
	t.Helper()
	if len(order) != g.Len() {
		t.Fatalf("order has %d vertices, graph has %d", len(order), g.Len())
	}
	pos := make(map[K]int, len(order))
	for i, v := range order {
		if _, dup := pos[v]; dup {
			t.Fatalf("vertex %v appears twice", v)
		}
		pos[v] = i
	}
	for _, v := range order {
		for _, d := range g.DependsOn(v) {
			if pos[d] >= pos[v] {
				t.Fatalf("%v comes before its dependency %v", v, d)
			}
		}
	}
}

func TestCycles(t *testing.T) {
	tests := []struct {
		name    string
		edges   [][2]string
		want    [][]string
		wantErr string
	}{
		{"acyclic", [][2]string{e("a", "b"), e("b", "c"), e("a", "c")}, nil, ""},
		{"2-cycle", [][2]string{e("a", "b"), e("b", "a")},
			[][]string{{"a", "b"}}, "cycle: a -> b -> a"},
		{"2-cycle reversed insertion", [][2]string{e("b", "a"), e("a", "b")},
			[][]string{{"a", "b"}}, "cycle: a -> b -> a"},
		{"3-cycle", [][2]string{e("a", "b"), e("b", "c"), e("c", "a")},
			[][]string{{"a", "b", "c"}}, "cycle: a -> b -> c -> a"},
		{"3-cycle other insertion", [][2]string{e("c", "a"), e("b", "c"), e("a", "b")},
			[][]string{{"a", "b", "c"}}, "cycle: a -> b -> c -> a"},
		{"3-cycle other direction", [][2]string{e("b", "a"), e("c", "b"), e("a", "c")},
			[][]string{{"a", "c", "b"}}, "cycle: a -> c -> b -> a"},
		{"self loop", [][2]string{e("a", "b"), e("b", "b")},
			[][]string{{"b"}}, "cycle: b -> b"},
		{"two cycles", [][2]string{e("y", "x"), e("x", "y"), e("b", "a"), e("a", "b")},
			[][]string{{"a", "b"}, {"x", "y"}}, "cycle: a -> b -> a; cycle: x -> y -> x"},
		{"cycle plus acyclic parts", [][2]string{
			e("top", "c1"), e("c1", "c2"), e("c2", "c3"), e("c3", "c1"), e("c2", "leaf"), v("alone")},
			[][]string{{"c1", "c2", "c3"}}, "cycle: c1 -> c2 -> c3 -> c1"},
		// Non-simple component: pre-order DFS, smallest neighbour first.
		{"figure eight", [][2]string{e("a", "c"), e("c", "a"), e("a", "b"), e("b", "a")},
			[][]string{{"a", "b", "c"}}, "cycle: a -> b -> c -> a"},
		{"nested component", [][2]string{e("a", "d"), e("d", "b"), e("b", "a"), e("a", "c"), e("c", "d")},
			[][]string{{"a", "c", "d", "b"}}, "cycle: a -> c -> d -> b -> a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := build(tt.edges...)
			got := g.Cycles()
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("Cycles() = %v, want %v", got, tt.want)
			}
			order, err := g.TopoOrder()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("TopoOrder() error: %v", err)
				}
				assertTopo(t, g, order)
				return
			}
			var ce *CycleError[string]
			if !errors.As(err, &ce) {
				t.Fatalf("TopoOrder() error = %v, want *CycleError", err)
			}
			if order != nil {
				t.Errorf("TopoOrder() order = %v, want nil on cycle", order)
			}
			if !slices.EqualFunc(ce.Cycles, tt.want, slices.Equal) {
				t.Errorf("CycleError.Cycles = %v, want %v", ce.Cycles, tt.want)
			}
			if ce.Error() != tt.wantErr {
				t.Errorf("Error() = %q, want %q", ce.Error(), tt.wantErr)
			}
		})
	}
}

const big = 20_000

// chain builds 0 -> 1 -> ... -> n-1 (each depends on the next).
func chain(n int) *Graph[int] {
	g := New[int]()
	for i := 0; i+1 < n; i++ {
		g.Connect(i, i+1)
	}
	return g
}

func TestLargeChain(t *testing.T) {
	g := chain(big)
	order, err := g.TopoOrder()
	if err != nil {
		t.Fatal(err)
	}
	if order[0] != big-1 || order[big-1] != 0 {
		t.Errorf("order starts %d ends %d, want %d and 0", order[0], order[big-1], big-1)
	}
	assertTopo(t, g, order)
	if c := g.Cycles(); c != nil {
		t.Errorf("Cycles() found %d cycles in a chain", len(c))
	}

	// Closing the chain makes one 20k-long cycle, walked in chain order.
	g.Connect(big-1, 0)
	cycles := g.Cycles()
	if len(cycles) != 1 || len(cycles[0]) != big {
		t.Fatalf("Cycles() = %d cycles, want one of %d vertices", len(cycles), big)
	}
	for i, v := range cycles[0] {
		if v != i {
			t.Fatalf("cycle[%d] = %d, want %d", i, v, i)
		}
	}
	if _, err := g.TopoOrder(); err == nil {
		t.Error("TopoOrder() on closed chain: want error")
	}
}

func TestLargeWide(t *testing.T) {
	// Vertex 0 depends on every other vertex, and every other vertex on a
	// shared sink big.
	g := New[int]()
	for i := 1; i < big; i++ {
		g.Connect(0, i)
		g.Connect(i, big)
	}
	order, err := g.TopoOrder()
	if err != nil {
		t.Fatal(err)
	}
	assertTopo(t, g, order)
	if order[0] != big || order[1] != 1 || order[len(order)-1] != 0 {
		t.Errorf("order = [%d %d ... %d], want [%d 1 ... 0]", order[0], order[1], order[len(order)-1], big)
	}
	if c := g.Cycles(); c != nil {
		t.Errorf("Cycles() found %d cycles", len(c))
	}
}

func TestCycleErrorMessage(t *testing.T) {
	err := &CycleError[string]{Cycles: [][]string{{`exec.a["x"]`, `exec.b`}}}
	if got, want := err.Error(), `cycle: exec.a["x"] -> exec.b -> exec.a["x"]`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func BenchmarkTopoOrder10k(b *testing.B) {
	// 100 layers of 100 vertices; each vertex depends on 3 in the next layer.
	const layers, width = 100, 100
	g := New[string]()
	name := func(l, i int) string { return fmt.Sprintf("exec.task[\"l%03d_%03d\"]", l, i) }
	for l := 0; l < layers; l++ {
		for i := 0; i < width; i++ {
			g.Add(name(l, i))
			if l+1 < layers {
				for k := 0; k < 3; k++ {
					g.Connect(name(l, i), name(l+1, (i*7+k*31)%width))
				}
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.TopoOrder(); err != nil {
			b.Fatal(err)
		}
	}
}
