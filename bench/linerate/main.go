// Command linerate is a timing helper of scripts/bench.sh: it reads lines on
// standard input and, every -every lines that contain -match, prints how many it
// has seen, the seconds since it started, and the seconds the last -every took.
// Piping `flow run` into it shows whether the rate of finished tasks stays flat
// over a long run (checkpoints cost the same late in a run as early on). With
// -lines it instead prints every matching line after the milliseconds since start,
// which shows how long a dependent waits after its dependency finished.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	match := flag.String("match", ": succeeded", "count lines containing this text")
	every := flag.Int("every", 2000, "report after every this many counted lines")
	lines := flag.Bool("lines", false, "print each matching line with the milliseconds since start")
	since := flag.Float64("start", 0, "start time in Unix seconds (e.g. bash's $EPOCHREALTIME before launching the producer); default: when linerate starts")
	flag.Parse()
	start := time.Now()
	if *since > 0 {
		start = time.Unix(0, int64(*since*1e9))
	}
	last := start
	n := 0
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), *match) {
			continue
		}
		if *lines {
			fmt.Printf("%.1f\t%s\n", float64(time.Since(start).Microseconds())/1000, sc.Text())
			continue
		}
		if n++; n%*every == 0 {
			now := time.Now()
			fmt.Printf("%d\t%.3f\t%.3f\n", n, now.Sub(start).Seconds(), now.Sub(last).Seconds())
			last = now
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "linerate:", err)
		os.Exit(1)
	}
	if !*lines {
		fmt.Printf("%d\t%.3f\t(end)\n", n, time.Since(start).Seconds())
	}
}
