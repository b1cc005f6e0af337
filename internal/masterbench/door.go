package masterbench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pkg/errors"
)

// The door modes of Config.Door: each row runs against a master without
// the HTTP side door, with it, or with both, one after the other.
const (
	DoorOff  = "off"
	DoorOn   = "on"
	DoorBoth = "both"
)

// doors returns the modes each row runs in, in order: false without the
// door, true with it.
func doors(mode string) []bool {
	switch mode {
	case DoorOn:
		return []bool{true}
	case DoorBoth:
		return []bool{false, true}
	}
	return []bool{false}
}

// scrapeEvery is how often the door is read during a window: a Prometheus
// scrape interval at its shortest common setting, and a person with the
// status page open.
const scrapeEvery = time.Second

// scrapes is what reading the door during a window did.
type scrapes struct {
	ok, failed int
	err        error // the first failure
	trainers   int   // trainers_total of the last /status.json read
}

// scrapeDoor reads base's /metrics and /status.json every scrapeEvery from
// from until until, and counts each page read in full.
func scrapeDoor(ctx context.Context, client *http.Client, base string, from, until time.Time) scrapes {
	var s scrapes
	fail := func(err error) {
		s.failed++
		if s.err == nil {
			s.err = errors.Wrap(err, "side door")
		}
	}
	base = strings.TrimSuffix(base, "/")
	for at := from; at.Before(until); at = at.Add(scrapeEvery) {
		if !sleepUntil(ctx, at) {
			return s
		}
		if err := readPage(ctx, client, base+"/metrics", func(r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		}); err != nil {
			fail(err)
		} else {
			s.ok++
		}
		var st struct {
			TrainersTotal int `json:"trainers_total"`
		}
		if err := readPage(ctx, client, base+"/status.json", func(r io.Reader) error {
			return json.NewDecoder(r).Decode(&st)
		}); err != nil {
			fail(err)
		} else {
			s.ok++
			s.trainers = st.TrainersTotal
		}
	}
	return s
}

// readPage gets url and hands its body to read; an answer but 200 OK is
// an error.
func readPage(ctx context.Context, client *http.Client, url string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.Errorf("%s from %s", resp.Status, url)
	}
	return read(resp.Body)
}
