package masterbench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteText prints the report as tables for people.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d CPUs; trainers speak %s; %d chunk(s) per task; %v warm-up, then %v measured per row\n",
		r.CPUs, r.Codec, r.ChunksPerTask, r.Warmup, r.Duration)
	for _, d := range r.Datasets {
		fmt.Fprintf(w, "\n%d chunks, %d tasks: accepted in %v; master RSS %s (peak %s)",
			d.Chunks, d.Tasks, d.Accept.Round(time.Millisecond), mib(d.Memory.RSS), mib(d.Memory.Peak))
		if d.Failover > 0 {
			fmt.Fprintf(w, "; failover to a standby %v (its RSS %s)", d.Failover.Round(time.Millisecond), mib(d.FailoverMemory.RSS))
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "trainers\ttasks/s\tp50\tp99\tmax\tbare txn/s\tratio\tWAL B/task\tput B/task\tno-task\t")
		for _, x := range d.Runs {
			fmt.Fprintf(tw, "%d\t%.0f\t%v\t%v\t%v\t%.0f\t%.2f\t%.0f\t%.0f\t%d\t\n", x.Trainers, x.TasksPerSec,
				round(x.Latency.P50), round(x.Latency.P99), round(x.Latency.Max), x.BareTxnsPerSec, x.Ratio,
				x.WALBytesPerTask, x.PutBytesPerTask, x.NoTask)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
