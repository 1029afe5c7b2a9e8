package chatd

// History page sizes of the contract (docs/protocol.md).
const (
	// DefaultHistoryLimit is the page size when HistoryQuery.Limit is <= 0.
	DefaultHistoryLimit = 100
	// MaxHistoryLimit caps HistoryQuery.Limit.
	MaxHistoryLimit = 1000
)

// HistoryQuery selects a page of a chat's history. The page starts strictly
// after the cursor, or, with BeforeSeq, ends strictly below it.
type HistoryQuery struct {
	// SinceID is a message id; when set it wins over AfterSeq. An id not in
	// this chat (purged by retention, never seen, another chat's) starts the
	// page at the oldest retained message, as the wire contract asks.
	SinceID string
	// AfterSeq is a seq cursor; 0 means from the oldest retained message.
	// Negative is ErrInvalid.
	AfterSeq int64
	// BeforeSeq, when above 0, selects the Limit messages just below this
	// seq instead (clients page up from the newest). It excludes SinceID
	// and AfterSeq; negative is ErrInvalid.
	BeforeSeq int64
	// Limit is the page size: <= 0 means DefaultHistoryLimit, and values over
	// MaxHistoryLimit are capped.
	Limit int
}
