package finality

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The 30 names spec 002 §12.1.6 (list 1) says are recorded in the
// FinalityLog under the same name as the I/F command/event vocabulary.
var ifSharedNames = []string{
	"PaymentInitiated", "PayerExecConfirmed", "PayeeExecConfirmed", "DecidedCancel",
	"NoDebitRecordedProofSubmitted", "CreditFailedProofSubmitted", "HUnlockAuthorized",
	"MisrecordCorrected", "RtpRequested",
	"LsmRunCommitted", "LsmRunFallback", "HtlcLocked", "HtlcClaimRejected",
	"HtlcConditionsEvaluated", "CrossChainLocked", "OnchainProofObserved",
	"OnchainFinalityClassified", "BenefitAttested", "DnsHoldRequested", "DnsHoldActivated", "DnsResumed",
	"DnsIntradayCutoff", "OwnershipTransferred", "OwnershipReclaimed",
	"SystemQuorumLossActivated", "SystemQuorumLossCleared", "SystemBcpActivated",
	"SystemBcpDeactivated", "DataAccessViolationDetected", "ClosedDomainAccessGranted",
}

func TestIFSharedNamesAreDeclared(t *testing.T) {
	if len(ifSharedNames) != 30 {
		t.Fatalf("spec list has %d names, want 30", len(ifSharedNames))
	}
	seen := map[string]bool{}
	for _, n := range ifSharedNames {
		if seen[n] {
			t.Errorf("%s listed twice", n)
		}
		seen[n] = true
		if !EventType(n).Declared() {
			t.Errorf("spec 002 §12.1.6 name %s is not a declared FinalityEventType", n)
		}
	}
	if EventType("PayerExecRequested").Declared() || EventType("NameCheckRequested").Declared() {
		t.Error("I/F-only request names (list 2) must not be FinalityLog event types")
	}
}

// moduleRoot is the repository root: tests run in their package folder,
// coordinator/<package>.
const moduleRoot = "../.."

// eventTypeLiterals returns every string literal the file uses as a
// FinalityLog event type: EventType("X") / finality.EventType("X")
// conversions, `EventType: "X"` fields, and `Type: "X"` in an Event
// literal.
func eventTypeLiterals(fset *token.FileSet, f *ast.File) map[string]token.Position {
	out := map[string]token.Position{}
	lit := func(e ast.Expr) {
		if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if s, err := strconv.Unquote(b.Value); err == nil {
				out[s] = fset.Position(b.Pos())
			}
		}
	}
	isName := func(e ast.Expr, name string) bool {
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name == name
		case *ast.SelectorExpr:
			return x.Sel.Name == name
		}
		return false
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if isName(x.Fun, "EventType") && len(x.Args) == 1 {
				lit(x.Args[0])
			}
		case *ast.CompositeLit:
			if x.Type != nil && isName(x.Type, "Fact") {
				return true // an entitystate.Fact: its EventType names an EntityStateLog event, not a FinalityLog one
			}
			for _, el := range x.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if isName(kv.Key, "EventType") || (isName(kv.Key, "Type") && x.Type != nil && isName(x.Type, "Event")) {
					lit(kv.Value)
				}
			}
		}
		return true
	})
	return out
}

// Every event type written anywhere in the module's (non-test) code is a
// declared one. Append also refuses undeclared types at run time; this
// catches them before they run.
func TestCodeWritesOnlyDeclaredEventTypes(t *testing.T) {
	root := moduleRoot
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "var") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil // another helper's half-written file is not this test's concern
		}
		files++
		for s, pos := range eventTypeLiterals(fset, f) {
			if !EventType(s).Declared() {
				t.Errorf("%s: event type %q is not declared in coordinator/finality/events.go", pos, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("scanned only %d files from %s", files, root)
	}
}

func TestEventTypeScannerFindsLiterals(t *testing.T) {
	src := `package x
func f() {
	_ = finality.EventType("Bogus1")
	_ = finality.Event{TxID: "T", Type: "Bogus2"}
	_ = lane.Transition{EventType: "Bogus3"}
	_ = other{Type: "NotAnEvent"}
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := eventTypeLiterals(fset, f)
	for _, want := range []string{"Bogus1", "Bogus2", "Bogus3"} {
		if _, ok := got[want]; !ok {
			t.Errorf("scanner missed %s", want)
		}
	}
	if _, ok := got["NotAnEvent"]; ok || len(got) != 3 {
		t.Errorf("scanner found %v, want exactly Bogus1-3", got)
	}
}
