package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

// ListChats returns the caller's chats (GET /api/chats), each with the
// caller's read_seq and unread count as the server computed them when it
// answered: an app's badge counts without paging any history.
func (c *Client) ListChats(ctx context.Context) ([]chatd.UserChat, error) {
	var out struct {
		Chats []chatd.UserChat `json:"chats"`
	}
	if err := c.rest(ctx, "GET", "/api/chats", nil, &out); err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	return out.Chats, nil
}

// CreateGroup creates a group chat with the caller and members
// (POST /api/chats). It does not track it; Track does, or its first message.
func (c *Client) CreateGroup(ctx context.Context, title string, members []string) (chatd.Chat, error) {
	var ch chatd.Chat
	body := map[string]any{"title": title, "members": members}
	if err := c.rest(ctx, "POST", "/api/chats", body, &ch); err != nil {
		return chatd.Chat{}, fmt.Errorf("create group: %w", err)
	}
	return ch, nil
}

// Direct returns the direct chat between the caller and user, creating it
// the first time (POST /api/chats/direct).
func (c *Client) Direct(ctx context.Context, user string) (chatd.Chat, error) {
	var ch chatd.Chat
	if err := c.rest(ctx, "POST", "/api/chats/direct", map[string]string{"user": user}, &ch); err != nil {
		return chatd.Chat{}, fmt.Errorf("direct chat with %s: %w", user, err)
	}
	return ch, nil
}

// AddMember adds user to a group chat (POST /api/chats/{id}/members).
func (c *Client) AddMember(ctx context.Context, chat, user string) (chatd.Chat, error) {
	var ch chatd.Chat
	path := "/api/chats/" + pathEscape(chat) + "/members"
	if err := c.rest(ctx, "POST", path, map[string]string{"user": user}, &ch); err != nil {
		return chatd.Chat{}, fmt.Errorf("add %s to %s: %w", user, chat, err)
	}
	return ch, nil
}

// RemoveMember removes user from a chat (DELETE /api/chats/{id}/members/{user}).
func (c *Client) RemoveMember(ctx context.Context, chat, user string) error {
	path := "/api/chats/" + pathEscape(chat) + "/members/" + pathEscape(user)
	if err := c.rest(ctx, "DELETE", path, nil, nil); err != nil {
		return fmt.Errorf("remove %s from %s: %w", user, chat, err)
	}
	return nil
}

// PostMessage sends over REST (POST /api/chats/{id}/messages) instead of the
// WebSocket; the same cid is stored once across both paths. The message is
// not merged into the tracker: it comes back from live delivery or history.
func (c *Client) PostMessage(ctx context.Context, chat, cid, body string) (Accepted, error) {
	return c.PostMessageMeta(ctx, chat, cid, body, nil)
}

// PostMessageMeta is PostMessage with meta, an optional JSON object (at most
// 2048 bytes) the server stores and returns verbatim; nil sends none.
func (c *Client) PostMessageMeta(ctx context.Context, chat, cid, body string, meta json.RawMessage) (Accepted, error) {
	in := map[string]any{"cid": cid, "body": body}
	if meta != nil {
		in["meta"] = meta
	}
	var out struct {
		ID  string    `json:"id"`
		Seq int64     `json:"seq"`
		CID string    `json:"cid"`
		TS  time.Time `json:"ts"`
	}
	path := "/api/chats/" + pathEscape(chat) + "/messages"
	if err := c.rest(ctx, "POST", path, in, &out); err != nil {
		return Accepted{}, fmt.Errorf("post to %s: %w", chat, err)
	}
	return Accepted{Chat: chat, CID: out.CID, ID: out.ID, Seq: out.Seq, TS: out.TS}, nil
}

// APIError is a REST call's error answer.
type APIError struct {
	Status  int
	Code    wire.Code `json:"code"`
	Message string    `json:"error"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("http %d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap maps the status to the domain error (401 to ErrUnauthorized).
func (e *APIError) Unwrap() error {
	switch e.Status {
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return chatd.ErrForbidden
	case http.StatusNotFound:
		return chatd.ErrNotFound
	case http.StatusBadRequest:
		return chatd.ErrInvalid
	case http.StatusConflict:
		return chatd.ErrConflict
	case http.StatusRequestEntityTooLarge:
		return chatd.ErrTooLarge
	case http.StatusTooManyRequests:
		return chatd.ErrRateLimited
	case http.StatusServiceUnavailable:
		return chatd.ErrUnavailable
	}
	return nil
}

// rest performs one JSON call with the bearer token; out may be nil.
func (c *Client) rest(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint().rest+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	tok, err := c.token(ctx)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode >= 300 {
		ae := &APIError{Status: resp.StatusCode}
		_ = json.Unmarshal(data, ae) // a non-JSON error body still has its status
		if ae.Message == "" {
			ae.Message = http.StatusText(resp.StatusCode)
		}
		return ae
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

func pathEscape(s string) string { return url.PathEscape(s) }
