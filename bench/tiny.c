// SPDX-License-Identifier: GPL-2.0
/*
 * tiny: the program that the exec benchmarks exec.  It does nothing, so
 * that an exec test measures fork, exec and exit rather than the work of
 * the program; built static it has no dynamic loader to run either.
 */
int main(void)
{
	return 0;
}
