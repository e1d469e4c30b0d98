package reloader

// ReadTimeout is the status server's, for the tests of package
// reloader_test that hold a push's body back.
const ReadTimeout = readTimeout
