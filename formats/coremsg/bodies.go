package coremsg

// Field conventions shared by the bodies:
//   - Branch 9(3) 支店番号, AccountType 9(1) 預金種目 (1 普通, 2 当座, 4 貯蓄,
//     9 その他), AccountNo 9(7) 口座番号 — kept as digit strings.
//   - Amount P(8): 15-digit packed decimal, minor units (yen), sign C.
//   - Balances S9(15): signed zoned with a trailing overpunch sign.
//   - Dates 9(8) YYYYMMDD and timestamps 9(14) YYYYMMDDhhmmss, JST.
//   - Reason X(8): the core's reason code, blank when the result is positive.

// PostingRequest (PSTQ) asks the core to post a debit, a credit or the
// reversal of an earlier posting. PostingRef is the core-side idempotency
// key: the core applies one reference once.
type PostingRequest struct {
	Kind        string   `fixed:"1,1,X" label:"記帳区分 (D 出金, C 入金, V 取消)"`
	PostingRef  string   `fixed:"2,32,X" label:"記帳参照番号"`
	OriginalRef string   `fixed:"34,32,X" label:"取消対象の記帳参照番号 (V のみ)"`
	Branch      string   `fixed:"66,3,9" label:"支店番号"`
	AccountType uint8    `fixed:"69,1,9" label:"預金種目"`
	AccountNo   string   `fixed:"70,7,9" label:"口座番号"`
	Amount      int64    `fixed:"77,8,P" label:"金額 (円)"`
	Currency    string   `fixed:"85,3,X" label:"通貨"`
	ValueDate   string   `fixed:"88,8,9" label:"起算日 (YYYYMMDD)"`
	Memo        string   `fixed:"96,20,K" label:"摘要 (カナ)"`
	_           struct{} `fixed:"116,5,FILLER"`
}

// PostingReply (PSTR) is the core's answer to a PSTQ.
type PostingReply struct {
	PostingRef     string   `fixed:"1,32,X" label:"記帳参照番号"`
	Status         string   `fixed:"33,1,X" label:"記帳結果 (A 記帳済, R 拒否, D 記帳済の重複)"`
	Reason         string   `fixed:"34,8,X" label:"理由コード"`
	JournalNo      string   `fixed:"42,20,X" label:"勘定系記帳番号"`
	BalanceAfter   int64    `fixed:"62,15,S9" label:"記帳後残高 (円)"`
	AvailableAfter int64    `fixed:"77,8,P" label:"記帳後利用可能残高 (円)"`
	PostedAt       string   `fixed:"85,14,9" label:"記帳日時 (YYYYMMDDhhmmss)"`
	_              struct{} `fixed:"99,2,FILLER"`
}

// HoldRequest (HLDQ) places (Action H) or releases (Action R) a hold of
// Amount on an account.
type HoldRequest struct {
	Action      string   `fixed:"1,1,X" label:"区分 (H 拘束, R 解除)"`
	HoldRef     string   `fixed:"2,32,X" label:"拘束参照番号"`
	Branch      string   `fixed:"34,3,9" label:"支店番号"`
	AccountType uint8    `fixed:"37,1,9" label:"預金種目"`
	AccountNo   string   `fixed:"38,7,9" label:"口座番号"`
	Amount      int64    `fixed:"45,8,P" label:"金額 (円)"`
	Currency    string   `fixed:"53,3,X" label:"通貨"`
	ExpiryDate  string   `fixed:"56,8,9" label:"拘束期限 (YYYYMMDD, 00000000 は無期限)"`
	_           struct{} `fixed:"64,17,FILLER"`
}

// HoldReply (HLDR) is the core's answer to a HLDQ.
type HoldReply struct {
	HoldRef   string   `fixed:"1,32,X" label:"拘束参照番号"`
	Status    string   `fixed:"33,1,X" label:"結果 (A 受付, R 拒否)"`
	Reason    string   `fixed:"34,8,X" label:"理由コード"`
	HeldTotal int64    `fixed:"42,8,P" label:"拘束合計 (円)"`
	Available int64    `fixed:"50,15,S9" label:"利用可能残高 (円)"`
	_         struct{} `fixed:"65,16,FILLER"`
}

// BalanceRequest (BALQ) asks for an account's balances.
type BalanceRequest struct {
	Branch      string   `fixed:"1,3,9" label:"支店番号"`
	AccountType uint8    `fixed:"4,1,9" label:"預金種目"`
	AccountNo   string   `fixed:"5,7,9" label:"口座番号"`
	_           struct{} `fixed:"12,9,FILLER"`
}

// BalanceReply (BALR) gives ledger and available balances and holds.
type BalanceReply struct {
	Branch        string   `fixed:"1,3,9" label:"支店番号"`
	AccountType   uint8    `fixed:"4,1,9" label:"預金種目"`
	AccountNo     string   `fixed:"5,7,9" label:"口座番号"`
	AccountStatus string   `fixed:"12,1,X" label:"口座状態 (N 正常, F 凍結, H 解約保留, C 解約済, X 該当なし)"`
	Ledger        int64    `fixed:"13,15,S9" label:"現在残高 (円)"`
	Available     int64    `fixed:"28,15,S9" label:"利用可能残高 (円)"`
	HeldTotal     int64    `fixed:"43,8,P" label:"拘束合計 (円)"`
	Currency      string   `fixed:"51,3,X" label:"通貨"`
	AsOf          string   `fixed:"54,14,9" label:"残高基準日時 (YYYYMMDDhhmmss)"`
	_             struct{} `fixed:"68,13,FILLER"`
}

// StatusInquiryRequest (PSIQ) asks what became of a posting reference.
type StatusInquiryRequest struct {
	PostingRef string   `fixed:"1,32,X" label:"記帳参照番号"`
	_          struct{} `fixed:"33,8,FILLER"`
}

// StatusInquiryReply (PSIR) reports a posting's state.
type StatusInquiryReply struct {
	PostingRef string   `fixed:"1,32,X" label:"記帳参照番号"`
	Status     string   `fixed:"33,1,X" label:"状態 (A 記帳済, R 拒否, P 処理中, N 該当なし)"`
	Kind       string   `fixed:"34,1,X" label:"記帳区分 (D, C, V; N のときは空白)"`
	Amount     int64    `fixed:"35,8,P" label:"金額 (円)"`
	JournalNo  string   `fixed:"43,20,X" label:"勘定系記帳番号"`
	PostedAt   string   `fixed:"63,14,9" label:"記帳日時 (YYYYMMDDhhmmss, 未記帳は 0)"`
	Reason     string   `fixed:"77,8,X" label:"理由コード"`
	_          struct{} `fixed:"85,16,FILLER"`
}

// NameCheckRequest (NMCQ) asks whether Name is the account holder's name.
type NameCheckRequest struct {
	Branch      string   `fixed:"1,3,9" label:"支店番号"`
	AccountType uint8    `fixed:"4,1,9" label:"預金種目"`
	AccountNo   string   `fixed:"5,7,9" label:"口座番号"`
	Name        string   `fixed:"12,30,K" label:"名義 (カナ)"`
	_           struct{} `fixed:"42,19,FILLER"`
}

// NameCheckReply (NMCR) answers a NMCQ.
type NameCheckReply struct {
	Result string   `fixed:"1,1,X" label:"結果 (M 一致, U 不一致, N 口座なし)"`
	Reason string   `fixed:"2,8,X" label:"理由コード"`
	_      struct{} `fixed:"10,11,FILLER"`
}

// AccountVerifyRequest (AVFQ) verifies an account exists and, when Name
// is not blank, how well the name matches.
type AccountVerifyRequest struct {
	VerificationID string   `fixed:"1,32,X" label:"照会番号"`
	Branch         string   `fixed:"33,3,9" label:"支店番号"`
	AccountType    uint8    `fixed:"36,1,9" label:"預金種目"`
	AccountNo      string   `fixed:"37,7,9" label:"口座番号"`
	Name           string   `fixed:"44,30,K" label:"照合名義 (カナ, 空白は存在確認のみ)"`
	_              struct{} `fixed:"74,7,FILLER"`
}

// AccountVerifyReply (AVFR) answers an AVFQ. The stored name is never
// returned; NameProvided echoes the request.
type AccountVerifyReply struct {
	VerificationID string   `fixed:"1,32,X" label:"照会番号"`
	Result         string   `fixed:"33,1,X" label:"結果 (M 一致, U 不一致, N 口座なし)"`
	MatchScore     uint8    `fixed:"34,3,9" label:"一致度 (0–100)"`
	FraudWarning   string   `fixed:"37,1,X" label:"不正警告 (Y/N)"`
	NameProvided   string   `fixed:"38,30,K" label:"照合名義 (要求の写し)"`
	_              struct{} `fixed:"68,13,FILLER"`
}

// AMLScreenRequest (AMLQ) asks the bank's AML/sanctions screening about a
// transfer.
type AMLScreenRequest struct {
	CheckType        string   `fixed:"1,1,X" label:"照会種別 (I 初回, R 再照会)"`
	Branch           string   `fixed:"2,3,9" label:"支店番号"`
	AccountType      uint8    `fixed:"5,1,9" label:"預金種目"`
	AccountNo        string   `fixed:"6,7,9" label:"口座番号"`
	Name             string   `fixed:"13,30,K" label:"名義 (カナ)"`
	Amount           int64    `fixed:"43,8,P" label:"金額 (円)"`
	Currency         string   `fixed:"51,3,X" label:"通貨"`
	CounterpartyBank string   `fixed:"54,4,9" label:"相手銀行番号"`
	CounterpartyName string   `fixed:"58,30,K" label:"相手名義 (カナ)"`
	_                struct{} `fixed:"88,13,FILLER"`
}

// AMLScreenReply (AMLR) answers an AMLQ.
type AMLScreenReply struct {
	Result  string   `fixed:"1,1,X" label:"結果 (C 問題なし, H 該当, P 審査中)"`
	Reason  string   `fixed:"2,8,X" label:"理由コード"`
	CaseRef string   `fixed:"10,20,X" label:"審査案件番号"`
	_       struct{} `fixed:"30,11,FILLER"`
}

// NotifyRequest (NTFQ) tells the core about an incoming credit (CR) or a
// request to pay (RP) for an account.
type NotifyRequest struct {
	Kind        string   `fixed:"1,2,X" label:"通知種別 (CR 入金, RP 請求)"`
	Branch      string   `fixed:"3,3,9" label:"支店番号"`
	AccountType uint8    `fixed:"6,1,9" label:"預金種目"`
	AccountNo   string   `fixed:"7,7,9" label:"口座番号"`
	Amount      int64    `fixed:"14,8,P" label:"金額 (円)"`
	Currency    string   `fixed:"22,3,X" label:"通貨"`
	PayerBank   string   `fixed:"25,4,9" label:"仕向銀行番号"`
	PayerName   string   `fixed:"29,30,K" label:"依頼人名 (カナ)"`
	Purpose     string   `fixed:"59,8,X" label:"目的コード"`
	_           struct{} `fixed:"67,14,FILLER"`
}

// NotifyReply (NTFR) acknowledges a NTFQ.
type NotifyReply struct {
	Result string   `fixed:"1,1,X" label:"結果 (A 受付, R 拒否)"`
	Reason string   `fixed:"2,8,X" label:"理由コード"`
	_      struct{} `fixed:"10,11,FILLER"`
}

// AccountMaintRequest (ACMQ) opens an account or moves it through its
// closing lifecycle: O opens it (Name required, balance 0), H puts it on
// closing hold (解約保留: credits refused, debits allowed so it can be paid
// out), N lifts the hold, C closes it (balance 0 and no active hold
// required). Each action assigns a state, so the core answers a resend of
// an action already in effect with Status D instead of acting twice.
type AccountMaintRequest struct {
	Action      string   `fixed:"1,1,X" label:"区分 (O 開設, H 解約保留, N 解約保留解除, C 解約)"`
	MaintRef    string   `fixed:"2,32,X" label:"受付参照番号"`
	Branch      string   `fixed:"34,3,9" label:"支店番号"`
	AccountType uint8    `fixed:"37,1,9" label:"預金種目"`
	AccountNo   string   `fixed:"38,7,9" label:"口座番号"`
	Name        string   `fixed:"45,30,K" label:"名義 (カナ, O のみ; 他は空白)"`
	_           struct{} `fixed:"75,6,FILLER"`
}

// AccountMaintReply (ACMR) answers an ACMQ with the account's state after
// it.
type AccountMaintReply struct {
	MaintRef      string   `fixed:"1,32,X" label:"受付参照番号"`
	Status        string   `fixed:"33,1,X" label:"結果 (A 処理済, D 既にその状態, R 拒否)"`
	Reason        string   `fixed:"34,8,X" label:"理由コード"`
	AccountStatus string   `fixed:"42,1,X" label:"口座状態 (N 正常, F 凍結, H 解約保留, C 解約済, X 該当なし)"`
	Ledger        int64    `fixed:"43,15,S9" label:"現在残高 (円)"`
	HeldTotal     int64    `fixed:"58,8,P" label:"拘束合計 (円)"`
	ProcessedAt   string   `fixed:"66,14,9" label:"処理日時 (YYYYMMDDhhmmss, 拒否は 0)"`
	_             struct{} `fixed:"80,1,FILLER"`
}

// MsgType and LayoutName of every body.
func (PostingRequest) MsgType() string       { return "PSTQ" }
func (PostingReply) MsgType() string         { return "PSTR" }
func (HoldRequest) MsgType() string          { return "HLDQ" }
func (HoldReply) MsgType() string            { return "HLDR" }
func (BalanceRequest) MsgType() string       { return "BALQ" }
func (BalanceReply) MsgType() string         { return "BALR" }
func (StatusInquiryRequest) MsgType() string { return "PSIQ" }
func (StatusInquiryReply) MsgType() string   { return "PSIR" }
func (NameCheckRequest) MsgType() string     { return "NMCQ" }
func (NameCheckReply) MsgType() string       { return "NMCR" }
func (AccountVerifyRequest) MsgType() string { return "AVFQ" }
func (AccountVerifyReply) MsgType() string   { return "AVFR" }
func (AMLScreenRequest) MsgType() string     { return "AMLQ" }
func (AMLScreenReply) MsgType() string       { return "AMLR" }
func (NotifyRequest) MsgType() string        { return "NTFQ" }
func (NotifyReply) MsgType() string          { return "NTFR" }

func (PostingRequest) LayoutName() string       { return "coremsg.PSTQ posting request" }
func (PostingReply) LayoutName() string         { return "coremsg.PSTR posting reply" }
func (HoldRequest) LayoutName() string          { return "coremsg.HLDQ hold/release request" }
func (HoldReply) LayoutName() string            { return "coremsg.HLDR hold/release reply" }
func (BalanceRequest) LayoutName() string       { return "coremsg.BALQ balance inquiry request" }
func (BalanceReply) LayoutName() string         { return "coremsg.BALR balance inquiry reply" }
func (StatusInquiryRequest) LayoutName() string { return "coremsg.PSIQ posting status inquiry request" }
func (StatusInquiryReply) LayoutName() string   { return "coremsg.PSIR posting status inquiry reply" }
func (NameCheckRequest) LayoutName() string     { return "coremsg.NMCQ name check request" }
func (NameCheckReply) LayoutName() string       { return "coremsg.NMCR name check reply" }
func (AccountVerifyRequest) LayoutName() string { return "coremsg.AVFQ account verify request" }
func (AccountVerifyReply) LayoutName() string   { return "coremsg.AVFR account verify reply" }
func (AMLScreenRequest) LayoutName() string     { return "coremsg.AMLQ AML screen request" }
func (AMLScreenReply) LayoutName() string       { return "coremsg.AMLR AML screen reply" }
func (NotifyRequest) LayoutName() string        { return "coremsg.NTFQ notify request" }
func (NotifyReply) LayoutName() string          { return "coremsg.NTFR notify reply" }

func (AccountMaintRequest) MsgType() string { return "ACMQ" }
func (AccountMaintReply) MsgType() string   { return "ACMR" }

func (AccountMaintRequest) LayoutName() string { return "coremsg.ACMQ account maintenance request" }
func (AccountMaintReply) LayoutName() string   { return "coremsg.ACMR account maintenance reply" }
