package coremsg

import "github.com/zcgw/zcgw/formats/charset"

// golden names a fixture file in fixtures/coremsg and the message it holds.
type golden struct {
	file string
	cs   *charset.Charset
	msg  Message
}

func hdr(reqID string, rc uint16) Header {
	return Header{RequestID: reqID, TxID: "TX-20261202-000123", BankCode: "0005",
		Timestamp: "20261202101500123", ReturnCode: rc}
}

func goldens() []golden {
	e := charset.EBCDIC290
	return []golden{
		{"PSTQ-debit.hex", e, Message{hdr("6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e", 0), &PostingRequest{
			Kind: "D", PostingRef: "PST-20261202-000123-D", Branch: "123", AccountType: 1, AccountNo: "1234567",
			Amount: 1200, Currency: "JPY", ValueDate: "20261202", Memo: "ZC ｿｳｷﾝ ﾌﾘｺﾐ"}}},
		{"PSTQ-credit.hex", e, Message{hdr("7a2b3c4d-5e6f-4a1b-9c2d-3e4f5a6b7c8d", 0), &PostingRequest{
			Kind: "C", PostingRef: "PST-20261202-000123-C", Branch: "045", AccountType: 2, AccountNo: "0007654",
			Amount: 123456789012345, Currency: "JPY", ValueDate: "20261202", Memo: "ﾔﾏﾀﾞ ﾀﾛｳ"}}},
		{"PSTQ-reversal.hex", e, Message{hdr("8b3c4d5e-6f7a-4b2c-8d3e-4f5a6b7c8d9e", 0), &PostingRequest{
			Kind: "V", PostingRef: "PST-20261202-000123-V", OriginalRef: "PST-20261202-000123-D",
			Branch: "123", AccountType: 1, AccountNo: "1234567", Amount: 1200, Currency: "JPY",
			ValueDate: "20261202", Memo: "ﾄﾘｹｼ"}}},
		{"PSTQ-debit-sjis.hex", charset.ShiftJIS, Message{hdr("6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e", 0), &PostingRequest{
			Kind: "D", PostingRef: "PST-20261202-000123-D", Branch: "123", AccountType: 1, AccountNo: "1234567",
			Amount: 1200, Currency: "JPY", ValueDate: "20261202", Memo: "ZC ｿｳｷﾝ ﾌﾘｺﾐ"}}},
		{"PSTR-applied.hex", e, Message{hdr("6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e", RCOK), &PostingReply{
			PostingRef: "PST-20261202-000123-D", Status: "A", JournalNo: "J2026120200000042",
			BalanceAfter: 98800, AvailableAfter: 48800, PostedAt: "20261202101500"}}},
		{"PSTR-rejected.hex", e, Message{hdr("6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e", RCBusiness), &PostingReply{
			PostingRef: "PST-20261202-000124-D", Status: "R", Reason: "INSUFF",
			BalanceAfter: -35000, AvailableAfter: -35000, PostedAt: "00000000000000"}}},
		{"HLDQ-hold.hex", e, Message{hdr("9c4d5e6f-7a8b-4c3d-9e4f-5a6b7c8d9e0f", 0), &HoldRequest{
			Action: "H", HoldRef: "H-20261202-000123", Branch: "123", AccountType: 1, AccountNo: "1234567",
			Amount: 50000, Currency: "JPY", ExpiryDate: "20261203"}}},
		{"HLDQ-release.hex", e, Message{hdr("ad5e6f7a-8b9c-4d4e-8f5a-6b7c8d9e0f1a", 0), &HoldRequest{
			Action: "R", HoldRef: "H-20261202-000123", Branch: "123", AccountType: 1, AccountNo: "1234567",
			Amount: 50000, Currency: "JPY", ExpiryDate: "00000000"}}},
		{"HLDR.hex", e, Message{hdr("9c4d5e6f-7a8b-4c3d-9e4f-5a6b7c8d9e0f", RCOK), &HoldReply{
			HoldRef: "H-20261202-000123", Status: "A", HeldTotal: 50000, Available: 50000}}},
		{"BALQ.hex", e, Message{hdr("be6f7a8b-9c0d-4e5f-9a6b-7c8d9e0f1a2b", 0), &BalanceRequest{
			Branch: "123", AccountType: 2, AccountNo: "7654321"}}},
		{"BALR-overdraft.hex", e, Message{hdr("be6f7a8b-9c0d-4e5f-9a6b-7c8d9e0f1a2b", RCOK), &BalanceReply{
			Branch: "123", AccountType: 2, AccountNo: "7654321", AccountStatus: "N",
			Ledger: -35000, Available: 465000, HeldTotal: 0, Currency: "JPY", AsOf: "20261202101500"}}},
		{"PSIQ.hex", e, Message{hdr("cf7a8b9c-0d1e-4f6a-8b7c-8d9e0f1a2b3c", 0), &StatusInquiryRequest{
			PostingRef: "PST-20261202-000123-D"}}},
		{"PSIR.hex", e, Message{hdr("cf7a8b9c-0d1e-4f6a-8b7c-8d9e0f1a2b3c", RCOK), &StatusInquiryReply{
			PostingRef: "PST-20261202-000123-D", Status: "A", Kind: "D", Amount: 1200,
			JournalNo: "J2026120200000042", PostedAt: "20261202101500"}}},
		{"PSIR-notfound.hex", e, Message{hdr("d08b9c0d-1e2f-4a7b-9c8d-9e0f1a2b3c4d", RCWarning), &StatusInquiryReply{
			PostingRef: "PST-20261202-999999-D", Status: "N", PostedAt: "00000000000000", Reason: "NOTFOUND"}}},
		{"NMCQ.hex", e, Message{hdr("e19c0d1e-2f3a-4b8c-8d9e-0f1a2b3c4d5e", 0), &NameCheckRequest{
			Branch: "045", AccountType: 1, AccountNo: "0007654", Name: "ｻﾄｳ ﾊﾅｺ"}}},
		{"NMCR.hex", e, Message{hdr("e19c0d1e-2f3a-4b8c-8d9e-0f1a2b3c4d5e", RCOK), &NameCheckReply{Result: "M"}}},
		{"AVFQ.hex", e, Message{hdr("f20d1e2f-3a4b-4c9d-9e0f-1a2b3c4d5e6f", 0), &AccountVerifyRequest{
			VerificationID: "V-20261202-000007", Branch: "045", AccountType: 1, AccountNo: "0007654", Name: "ｻﾄｳ ﾊﾅｺ"}}},
		{"AVFR.hex", e, Message{hdr("f20d1e2f-3a4b-4c9d-9e0f-1a2b3c4d5e6f", RCOK), &AccountVerifyReply{
			VerificationID: "V-20261202-000007", Result: "U", MatchScore: 80, FraudWarning: "N", NameProvided: "ｻﾄｳ ﾊﾅｺ"}}},
		{"AMLQ.hex", e, Message{hdr("031e2f3a-4b5c-4d0e-8f1a-2b3c4d5e6f7a", 0), &AMLScreenRequest{
			CheckType: "I", Branch: "123", AccountType: 1, AccountNo: "1234567", Name: "ﾔﾏﾀﾞ ﾀﾛｳ",
			Amount: 2500000, Currency: "JPY", CounterpartyBank: "0009", CounterpartyName: "(ｶ)ｾﾞﾆｽ ｼﾖｳｼﾞ"}}},
		{"AMLR.hex", e, Message{hdr("031e2f3a-4b5c-4d0e-8f1a-2b3c4d5e6f7a", RCOK), &AMLScreenReply{
			Result: "P", Reason: "REVIEW", CaseRef: "AML-2026-000031"}}},
		{"NTFQ.hex", e, Message{hdr("142f3a4b-5c6d-4e1f-9a2b-3c4d5e6f7a8b", 0), &NotifyRequest{
			Kind: "CR", Branch: "045", AccountType: 1, AccountNo: "0007654", Amount: 1200, Currency: "JPY",
			PayerBank: "0001", PayerName: "ﾀﾅｶ ﾀﾛｳ", Purpose: "P2P"}}},
		{"NTFR.hex", e, Message{hdr("142f3a4b-5c6d-4e1f-9a2b-3c4d5e6f7a8b", RCOK), &NotifyReply{Result: "A"}}},
		{"ACMQ-open.hex", e, Message{hdr("25304b5c-6d7e-4f20-8a3b-4c5d6e7f8a9b", 0), &AccountMaintRequest{
			Action: "O", MaintRef: "ACM-20261202-000001", Branch: "100", AccountType: 1, AccountNo: "0000042", Name: "ｽｽﾞｷ ｲﾁﾛｳ"}}},
		{"ACMQ-close.hex", e, Message{hdr("36415c6d-7e8f-4031-9b4c-5d6e7f8a9b0c", 0), &AccountMaintRequest{
			Action: "C", MaintRef: "ACM-20261202-000002", Branch: "100", AccountType: 1, AccountNo: "0000042"}}},
		{"ACMR-closed.hex", e, Message{hdr("36415c6d-7e8f-4031-9b4c-5d6e7f8a9b0c", RCOK), &AccountMaintReply{
			MaintRef: "ACM-20261202-000002", Status: "A", AccountStatus: "C", ProcessedAt: "20261202101500"}}},
		{"ACMR-refused.hex", e, Message{hdr("36415c6d-7e8f-4031-9b4c-5d6e7f8a9b0c", RCBusiness), &AccountMaintReply{
			MaintRef: "ACM-20261202-000002", Status: "R", Reason: "BALNZ", AccountStatus: "H", Ledger: 1200,
			ProcessedAt: "00000000000000"}}},
	}
}
