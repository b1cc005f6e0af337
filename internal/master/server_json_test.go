package master

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// TestJSONSession: the shapes doc/protocol.md shows, as a person typing
// them (or a program in any language) sends and reads them.
func TestJSONSession(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 2)
	s, _ := newService(t, Config{ChunksPerTask: 1})
	addr := startServer(t, s)
	replies := porttest.JSONSession(t, addr,
		`{"method":"Master.GetTask","params":[{"Index":0,"Epoch":0,"Pass":0,"Trainer":"gpu7-4242"}],"id":1}`,
		fmt.Sprintf(`{"method":"Master.ReportDataset","params":[[%q]],"id":2}`, pattern),
		`{"method":"Master.GetTask","params":[{"Trainer":"gpu7-4242"}],"id":3}`,
		`{"method":"Master.TaskFinished","params":[{"Index":0,"Epoch":1,"Pass":0,"Blocks":[{},{},{}],"Trainer":"gpu7-4242"}],"id":4}`,
		`{"method":"Master.TaskFailed","params":[{"Index":1,"Epoch":1,"Pass":0,"Error":"cannot read"}],"id":5}`,
		`{"method":"Master.Status","params":[0],"id":6}`,
		`{"method":"Master.TaskProgress","params":[{"Index":0,"Epoch":1,"Pass":0,"Done":2}],"id":7}`,
	)
	for i, want := range []string{
		`{"error":"dataset not reported","id":1,"result":null}`,
		`{"error":null,"id":2,"result":0}`,
		`{"error":null,"id":3,"result":{"Blocks":[{"Idx":0,"NumRecords":3,"Offset":0,"Path":` + fmt.Sprintf("%q", strings.Replace(pattern, "*", "000", 1)) + `}],"Epoch":1,"Error":"","Index":0,"Pass":0}}`,
		`{"error":null,"id":4,"result":1}`,
		`{"error":"taskqueue: epoch from the future: task 1 epoch 1, it has had 0 dispatches in pass 0","id":5,"result":null}`,
	} {
		got, _ := json.Marshal(replies[i])
		if string(got) != want {
			t.Errorf("reply %d: %s\nwant     %s", i+1, got, want)
		}
	}
	if st := replies[5]["result"].(map[string]any); st["Done"] != 1.0 || st["Todo"] != 1.0 || st["Tasks"] != 2.0 {
		t.Errorf("status %v", replies[5])
	}
	if got, _ := json.Marshal(replies[6]); string(got) != `{"error":null,"id":7,"result":{"Report":2}}` {
		t.Errorf("progress of a task done: %s", got)
	}
}
