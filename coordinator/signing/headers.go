package signing

import (
	"net/http"

	"github.com/zcgw/zcgw/coordinator/ident"
)

// checkHeaderIdents refuses signature headers whose key id or nonce is not
// an identifier of its kind (coordinator/ident): INVALID_REQUEST naming
// the header, before anything is looked up or a nonce is stored.
func checkHeaderIdents(h http.Header, keyIDHeader, nonceHeader string) error {
	return ident.CheckAll(ident.Field{Name: keyIDHeader, Kind: ident.KeyID, Value: h.Get(keyIDHeader)},
		ident.Field{Name: nonceHeader, Kind: ident.Nonce, Value: h.Get(nonceHeader)})
}
