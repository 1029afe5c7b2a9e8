package client

// TokenExp exposes tokenExp to the black-box tests.
var TokenExp = tokenExp
