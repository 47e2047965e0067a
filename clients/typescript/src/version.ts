/** This library's version (semantic versioning). */
export const VERSION = '0.1.0';
