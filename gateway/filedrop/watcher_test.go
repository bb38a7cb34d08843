package filedrop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zcgw/zcgw/formats/zengin"
)

// The Watcher takes a dropped file without being asked, and stops with
// its context.
func TestWatcherTakesDroppedFilesUntilStopped(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- NewWatcher(f.p, 10*time.Millisecond).Run(ctx) }()
	f.drop("W.txt", zenginFile(t, zengin.KindTransfer, "0001", recs(3)))
	deadline := time.Now().Add(10 * time.Second)
	for f.count(`SELECT COUNT(*) FROM FileDrops WHERE status = 'ACCEPTED'`) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not take the file")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 3 {
		t.Fatalf("transfers = %d", n)
	}
}
