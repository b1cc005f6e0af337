package monitor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/statusapi"
)

// Data checkpoints and rewinds (protocol.md, Data checkpoints). The
// monitor counts those stored and the datasets rewound while this process
// led; what the status and the gauges show of them it reads from the
// leading service (JobSource.Checkpoints, each dataset's generation), which
// reads etcd's at a failover, so that a new leader shows its
// predecessor's last checkpoint and rewinds.

// CheckpointStored implements master.Observer.
func (m *Monitor) CheckpointStored(master.CheckpointSummary) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts.checkpoints++
}

// Rewound implements master.Observer.
func (m *Monitor) Rewound(master.RewindEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts.rewinds++
}

// checkpointsStatus turns the checkpoints the service keeps into the
// page's; nil while none is kept.
func checkpointsStatus(c master.CheckpointsState) *statusapi.CheckpointsStatus {
	if c.Last == nil {
		return nil
	}
	l := c.Last
	return &statusapi.CheckpointsStatus{
		Last: statusapi.CheckpointStatus{ID: l.ID, Name: l.Name, Time: l.Time.UTC(), Trainers: l.Trainers, Pinned: l.Pinned},
		Kept: append([]int64{}, c.Kept...), Pinned: append([]int64{}, c.Pinned...),
	}
}

// rewoundStatus turns a dataset's generation into its last rewind; nil
// for the generation of a dataset never rewound.
func rewoundStatus(j master.JobState) *statusapi.RewindStatus {
	gen := j.Gen
	if gen.Gen == 0 {
		return nil
	}
	r := &statusapi.RewindStatus{Generation: gen.Gen, Pass: gen.Pass, Left: gen.Left}
	if id, restart, ok := master.RewindMark(gen.Mark); ok {
		r.Checkpoint, r.Restart = id, restart
	}
	return r
}

// collectCheckpoints sends the series of the checkpoints: the counters,
// and for a job's leader (job) the newest checkpoint kept, 0 while none is.
func collectCheckpoints(ch chan<- prometheus.Metric, c *statusapi.CheckpointsStatus, cn counts, job bool) {
	ch <- prometheus.MustNewConstMetric(checkpointsDesc, prometheus.CounterValue, float64(cn.checkpoints))
	ch <- prometheus.MustNewConstMetric(rewindsDesc, prometheus.CounterValue, float64(cn.rewinds))
	var id, at float64
	switch {
	case c != nil:
		id, at = float64(c.Last.ID), float64(c.Last.Time.UnixMilli())/1000
	case !job:
		return
	}
	ch <- prometheus.MustNewConstMetric(lastCheckpoint, prometheus.GaugeValue, id)
	ch <- prometheus.MustNewConstMetric(lastCheckpointT, prometheus.GaugeValue, at)
}
