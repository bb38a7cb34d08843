package eod

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Processes of one node (the served node's EOD, a `zcgw jobs` run) may
// create the workbook key at once: they all end up with the one key on
// disk, never one each, and apply never creates it.
func TestWorkbookKeyCreatedOnceUnderRace(t *testing.T) {
	dir := t.TempDir()
	if _, err := WorkbookKey(dir, false); err == nil {
		t.Fatal("reading a missing key without create succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, WorkbookKeyFile)); !os.IsNotExist(err) {
		t.Fatalf("reading created the key: %v", err)
	}
	const n = 16
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			keys[i], errs[i] = WorkbookKey(dir, true)
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("goroutine %d got another key", i)
		}
	}
	onDisk, err := WorkbookKey(dir, false)
	if err != nil || !bytes.Equal(onDisk, keys[0]) {
		t.Fatalf("key on disk differs: %v", err)
	}
	fi, _ := os.Stat(filepath.Join(dir, WorkbookKeyFile))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v, want 0600", fi.Mode().Perm())
	}
	left, _ := filepath.Glob(filepath.Join(dir, WorkbookKeyFile+".*.tmp"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := os.WriteFile(filepath.Join(dir, WorkbookKeyFile), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := WorkbookKey(dir, true); err == nil {
		t.Fatal("a damaged key was accepted (or replaced)")
	}
}
