package masterbench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints the report as tables for people.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d CPUs; trainers speak %s; %d chunk(s) per task; %v warm-up, then %v measured per row\n",
		r.CPUs, r.Codec, r.ChunksPerTask, r.Warmup, r.Duration)
	if r.Progress {
		fmt.Fprintln(w, "every trainer reports progress once in every task (Master.TaskProgress: a fenced write per task)")
	}
	door := r.Door != "" && r.Door != DoorOff
	if door {
		fmt.Fprintf(w, "side door %s: with it, the master serves -http-addr, every trainer sends a name of its own, and /metrics and /status.json are read every %v of the window\n",
			r.Door, scrapeEvery)
	}
	for _, d := range r.Datasets {
		fmt.Fprintf(w, "\n%d chunks, %d tasks: accepted in %v; master RSS %s (peak %s)",
			d.Chunks, d.Tasks, d.Accept.Round(time.Millisecond), mib(d.Memory.RSS), mib(d.Memory.Peak))
		if d.DoorMemory != nil {
			fmt.Fprintf(w, ", with the door %s (peak %s)", mib(d.DoorMemory.RSS), mib(d.DoorMemory.Peak))
		}
		if d.Failover > 0 {
			fmt.Fprintf(w, "; failover to a standby %v (its RSS %s)", d.Failover.Round(time.Millisecond), mib(d.FailoverMemory.RSS))
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := "trainers\tdoor\ttasks/s\tp50\tp99\tmax\tbare txn/s\tratio\tWAL B/task\tput B/task\tno-task\t"
		if door {
			head += "scrapes\t"
		}
		fmt.Fprintln(tw, head)
		for _, x := range d.Runs {
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%v\t%v\t%v\t%.0f\t%.2f\t%.0f\t%.0f\t%d\t", x.Trainers, onOff(x.Door), x.TasksPerSec,
				round(x.Latency.P50), round(x.Latency.P99), round(x.Latency.Max), x.BareTxnsPerSec, x.Ratio,
				x.WALBytesPerTask, x.PutBytesPerTask, x.NoTask)
			if door {
				fmt.Fprintf(tw, "%s\t", scrapeText(x))
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, c := range d.DoorCost {
			fmt.Fprintf(w, "  with the door, %d trainer(s): %.3f of the tasks/s without it, %.3f of the ratio (windows %s)\n",
				c.Trainers, c.TasksPerSec, c.Ratio, strings.Join(c.Order, ", "))
		}
	}
	return nil
}

func onOff(door bool) string {
	if door {
		return DoorOn
	}
	return DoorOff
}

// scrapeText is the scrapes column: pages read, and failed reads if any.
func scrapeText(x Result) string {
	switch {
	case !x.Door:
		return ""
	case x.ScrapeErrors > 0:
		return fmt.Sprintf("%d (%d failed)", x.Scrapes, x.ScrapeErrors)
	}
	return fmt.Sprint(x.Scrapes)
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
