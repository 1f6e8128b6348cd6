    // ---- tile geometry ------------------------------------------------------------------
    __aicore__ inline void SetTile(uint32_t tile)
    {
        tileIdx = tile;
        n = TileImage(tile, tl.tilesH, tl.tilesW);
        const uint32_t ht = TileRow(tile, tl.tilesH, tl.tilesW), wt = TileCol(tile, tl.tilesW);
        oh0 = BlockStart(ht, tl.th);
        ow0 = BlockStart(wt, tl.tw);
        ohv = BlockLen(ht, tl.th, tl.oh);
        owv = BlockLen(wt, tl.tw, tl.ow);
        ih0 = WindowStart(oh0, tl.sh, tl.padTop);
        iw0 = WindowStart(ow0, tl.sw, tl.padLeft);
        rLo = WindowFirst(ih0);
        cLo = WindowFirst(iw0);
        ihv = WindowValid(ih0, tl.ih, tl.h);
        iwv = WindowValid(iw0, tl.iw, tl.w);
        pad = ihv != tl.ih || iwv != tl.iw;
    }

    __aicore__ inline uint32_t OutOffset(uint32_t cg) const
    {
        return (((n * tl.co1 + cg) * tl.oh + oh0) * tl.ow + ow0) * C0;
    }

    // valid rows of one output block: UB (th x tw) <-> GM (oh x ow); toGm picks the gap sides
    __aicore__ inline DataCopyParams OutRows(bool toGm) const
    {
        DataCopyParams p;
        p.blockCount = ohv;
        p.blockLen = owv * PB;
        const uint32_t ubGap = (tl.tw - owv) * PB, gmGap = (tl.ow - owv) * PB;
        p.srcGap = toGm ? ubGap : gmGap;
        p.dstGap = toGm ? gmGap : ubGap;
        return p;
    }
