package coremsg

import "testing"

func TestQueueNaming(t *testing.T) {
	if got := QueuesFor("001"); got != (Queues{"CORE.001.REQUEST", "CORE.001.REPLY", "CORE.001.BACKOUT"}) {
		t.Fatalf("default naming: %+v", got)
	}
	n := QueueNaming{Prefix: "ZC.{bank}.CORE.", Reply: "RESP"}
	if got := n.For("0005"); got != (Queues{"ZC.0005.CORE.REQUEST", "ZC.0005.CORE.RESP", "ZC.0005.CORE.BACKOUT"}) {
		t.Fatalf("configured naming: %+v", got)
	}
}
