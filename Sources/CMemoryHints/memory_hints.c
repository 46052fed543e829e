/* The header is all there is: SwiftPM wants a source file in a C target. */
