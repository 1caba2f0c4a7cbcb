"""The tables and figures of BYOA's rate studies: slopes, measured / bound maps and its audits."""
