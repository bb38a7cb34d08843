package filedrop

import (
	"fmt"
	"io"

	"github.com/zcgw/zcgw/formats/filetool"
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/zengin"
)

// reportSuffix names the error report of a refused file:
// error/<processing name>.errors.txt, beside the file.
const reportSuffix = ".errors.txt"

// writeReport writes the error report of a refused file: a short header,
// then every error on its own line in file order, each with its record
// number, line, byte offset, column, record type and field, reason and
// the offending bytes (formats/filetool.FormatError).
func writeReport(w io.Writer, d Drop, sum zengin.Summary, errs *fixed.ErrorList) error {
	_, err := fmt.Fprintf(w, "zcgw file drop: %s REJECTED, nothing from this file was applied\n"+
		"bank: %s\nfile: %s\nsha256: %s\nsize: %d bytes, %d records\nerrors: %d\n",
		d.FileName, d.BankID, d.ProcessingName, d.SHA256, d.Size, sum.Records, len(errs.Errs)+errs.Dropped)
	if err != nil {
		return err
	}
	for _, e := range errs.Errs {
		if _, err := fmt.Fprintln(w, filetool.FormatError(e)); err != nil {
			return err
		}
	}
	if errs.Dropped > 0 {
		_, err = fmt.Fprintf(w, "... and %d more errors not listed\n", errs.Dropped)
	}
	return err
}
