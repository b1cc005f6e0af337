package statusweb

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// TestRefusalsDoNotGrowTheLog (issue 23, defect 2): 1,000 requests
// without the token are each refused, and logged once: a refusal's
// warning is logged at most once per ratelog.Interval.
func TestRefusalsDoNotGrowTheLog(t *testing.T) {
	out := &porttest.Log{}
	log := logrus.New()
	log.SetOutput(out)
	srv, err := New(Config{Monitor: monitor.New(monitor.Config{}), Token: "secret", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status.json", nil))
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("a request without the token answered %d", rec.Code)
		}
	}
	if n := strings.Count(out.String(), "\n"); n != 1 || !strings.Contains(out.String(), "status request refused") {
		t.Fatalf("1000 refusals logged %d lines, want 1:\n%.2000s", n, out.String())
	}
}
