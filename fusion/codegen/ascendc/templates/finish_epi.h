        if (k >= mine) return;
        SetTile(UnitAt(aivIdx, k, tl.blockDim));
        for (uint32_t q = 0; q < tl.coSteps; ++q) {
            CopyInPre(q);
            Epilogue(q);
            CopyOut(q);
        }
