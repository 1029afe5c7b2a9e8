package wire

// DecodeClientFrameSlow is DecodeClientFrame through encoding/json alone,
// the reference the reflection-free decoder must agree with.
func DecodeClientFrameSlow(data []byte, maxFrameBytes int) (ClientFrame, error) {
	return decodeClientFrame(data, maxFrameBytes, false)
}

// DecodeServerFrameSlow is DecodeServerFrame through encoding/json alone.
func DecodeServerFrameSlow(data []byte, f *ServerFrame) error {
	return decodeServerFrame(data, f, false)
}
