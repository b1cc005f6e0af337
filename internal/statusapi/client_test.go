package statusapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trainmaster/master/go/discovery"
)

// TestClientAnswers: a page's answers as the client reads them: the
// status, and the errors that say what to mend, permanent or not.
func TestClientAnswers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		token     string
		code      int
		body      string
		want      string // in the error; "" for none
		permanent bool
	}{
		{"ok", "s3cret", http.StatusOK, string(must(json.Marshal(goldenStatus()))), "", false},
		{"no token", "", http.StatusUnauthorized, "", "/status.json wants the master's token: give -token-file", true},
		{"a wrong token", "guess", http.StatusUnauthorized, "", "/status.json refused the token of -token-file", true},
		{"no client certificate", "", http.StatusForbidden, "", "wants a client certificate signed by the master's client CA: give -tls-cert and -tls-key", true},
		{"no page", "", http.StatusNotFound, "", "/status.json is not a master's status page (404 Not Found); give the master's -http-addr", true},
		{"plain HTTP to HTTPS", "", http.StatusBadRequest, "Client sent an HTTP request to an HTTPS server.", "speaks HTTPS: give -tls-ca with the CA of the master's certificate", true},
		{"a bad request", "", http.StatusBadRequest, "no\n", "/status.json answered 400 Bad Request: no", true},
		{"trouble", "", http.StatusInternalServerError, "", "/status.json answered 500 Internal Server Error", false},
		{"not JSON", "", http.StatusOK, "<html>", "/status.json: invalid character", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if got := r.Header.Get("Authorization"); r.URL.Path != "/status.json" || (tc.token != "" && got != "Bearer "+tc.token) {
					t.Errorf("GET %s with %q", r.URL.Path, got)
				}
				w.WriteHeader(tc.code)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			addr := strings.TrimPrefix(srv.URL, "http://")
			st, err := NewClient(ClientConfig{Token: tc.token}).Status(context.Background(), addr)
			if tc.want == "" {
				if err != nil || st.TrainersTotal != 2 || st.Job == nil || *st.Job.PassETASeconds != 12.5 {
					t.Errorf("status %+v, error %v", st, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || Permanent(err) != tc.permanent {
				t.Errorf("error %v (permanent %v), want %q (permanent %v)", err, Permanent(err), tc.want, tc.permanent)
			}
		})
	}
}

// TestClientNoAnswer: a master that does not answer is not permanent, and
// its error leaves the URL to the caller.
func TestClientNoAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	_, err := NewClient(ClientConfig{}).Status(context.Background(), addr)
	if err == nil || Permanent(err) || strings.Contains(err.Error(), "status.json") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %v", err)
	}
}

// TestLeaderPage: the leader's page, none while no master leads, and a
// permanent error for a leader without a page.
func TestLeaderPage(t *testing.T) {
	leader := discovery.Master{Candidate: discovery.Candidate{Host: "node-a", PID: 41, HTTP: "10.0.0.5:8081"}, Leading: true}
	standby := discovery.Master{Candidate: discovery.Candidate{Host: "node-b", HTTP: "10.0.0.6:8081"}}
	if addr, err := LeaderPage([]discovery.Master{leader, standby}); addr != "10.0.0.5:8081" || err != nil {
		t.Errorf("leader's page %q, error %v", addr, err)
	}
	if addr, err := LeaderPage(nil); addr != "" || err != nil {
		t.Errorf("no master: page %q, error %v", addr, err)
	}
	leader.HTTP = ""
	addr, err := LeaderPage([]discovery.Master{leader})
	const want = "the leading master (node-a, pid 41) serves no status page: start the masters with -http-addr, or give -addr"
	if addr != "" || err == nil || err.Error() != want || !Permanent(err) {
		t.Errorf("a leader without a page: %q, error %v", addr, err)
	}
	if got := MasterName(standby); got != "node-b" {
		t.Errorf("MasterName %q", got)
	}
}
