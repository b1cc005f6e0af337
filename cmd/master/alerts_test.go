package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAlertRules checks doc/alerts.yml with promtool, runs its unit tests
// (doc/alerts_test.yml: each alert firing and not), and checks that
// doc/operations.md shows the rules as they are.
// TestPrometheusScrapesAJob loads the same rules into a real Prometheus.
func TestAlertRules(t *testing.T) {
	promtool := debianTool(t, promtoolBin, "prometheus")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../../doc"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if !strings.Contains(readDoc(t, "operations.md"), readDoc(t, "alerts.yml")) {
		t.Error("doc/operations.md does not show doc/alerts.yml as it is")
	}
}
