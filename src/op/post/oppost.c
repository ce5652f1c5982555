/* Placeholder until the deliverables are written. */
int ks_oppost_placeholder(void);
int ks_oppost_placeholder(void)
{
	return 0;
}
