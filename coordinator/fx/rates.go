package fx

import (
	"math/big"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// RateScale is the fixed-point scale of a rate (001 §17.4 RATE_SCALE): a
// rate is (minor units of to) / (minor units of from) x RateScale, an
// integer. 1 USD = 150 JPY is JPY->USD 100/150 x 1e8 = 66666666 (yen to
// cents) and USD->JPY 150/100 x 1e8 = 150000000.
const RateScale int64 = 100_000_000

// Convert is amount x rate / RateScale rounded down (forward conversion:
// the payee never receives a fraction the FXP did not buy). It is exact
// for every int64 input (big arithmetic inside); a result beyond int64 is
// INVALID_AMOUNT.
func Convert(amount, rate int64) (int64, error) {
	if amount <= 0 || rate <= 0 {
		return 0, domainerr.New("INVALID_AMOUNT", "conversion needs a positive amount and rate",
			map[string]any{"amount": amount, "rate": rate})
	}
	p := new(big.Int).Mul(big.NewInt(amount), big.NewInt(rate))
	p.Quo(p, big.NewInt(RateScale))
	if !p.IsInt64() {
		return 0, domainerr.New("INVALID_AMOUNT", "converted amount out of range", map[string]any{"amount": amount, "rate": rate})
	}
	return p.Int64(), nil
}

// ConvertBack is the source amount that buys amount of the target at
// rate: amount x RateScale / rate rounded up (backward conversion, 001
// §17.4 backward=ceil). The FXP then receives at least what the rate asks
// for the amount it pays: Convert(ConvertBack(a, r), r) >= a, so a
// payee-denominated transfer never makes the FXP pay out money it was not
// paid for. Exact for every int64 input; beyond int64 is INVALID_AMOUNT.
func ConvertBack(amount, rate int64) (int64, error) {
	if amount <= 0 || rate <= 0 {
		return 0, domainerr.New("INVALID_AMOUNT", "conversion needs a positive amount and rate",
			map[string]any{"amount": amount, "rate": rate})
	}
	p := new(big.Int).Mul(big.NewInt(amount), big.NewInt(RateScale))
	q, m := new(big.Int).QuoRem(p, big.NewInt(rate), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, domainerr.New("INVALID_AMOUNT", "converted amount out of range", map[string]any{"amount": amount, "rate": rate})
	}
	return q.Int64(), nil
}

// EffectiveRate is amountTo / amountFrom x RateScale rounded down: what
// the payer actually got, every hop's rounding included.
func EffectiveRate(amountFrom, amountTo int64) int64 {
	if amountFrom <= 0 {
		return 0
	}
	p := new(big.Int).Mul(big.NewInt(amountTo), big.NewInt(RateScale))
	p.Quo(p, big.NewInt(amountFrom))
	if !p.IsInt64() {
		return 0
	}
	return p.Int64()
}
