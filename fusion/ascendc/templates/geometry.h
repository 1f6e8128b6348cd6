    // ---- tile geometry ------------------------------------------------------------------
    __aicore__ inline void SetTile(uint32_t tile)
    {
        tileIdx = tile;
        const uint32_t perImage = tl.tilesH * tl.tilesW;
        n = tile / perImage;
        const uint32_t ht = (tile % perImage) / tl.tilesW, wt = tile % tl.tilesW;
        oh0 = ht * tl.th;
        ow0 = wt * tl.tw;
        ohv = tl.oh - oh0 < tl.th ? tl.oh - oh0 : tl.th;
        owv = tl.ow - ow0 < tl.tw ? tl.ow - ow0 : tl.tw;
        ih0 = static_cast<int32_t>(oh0 * tl.sh) - static_cast<int32_t>(tl.padTop);
        iw0 = static_cast<int32_t>(ow0 * tl.sw) - static_cast<int32_t>(tl.padLeft);
        const int32_t rHi = Min(ih0 + static_cast<int32_t>(tl.ih), static_cast<int32_t>(tl.h));
        const int32_t cHi = Min(iw0 + static_cast<int32_t>(tl.iw), static_cast<int32_t>(tl.w));
        rLo = Max(ih0, 0);
        cLo = Max(iw0, 0);
        ihv = rHi > rLo ? static_cast<uint32_t>(rHi - rLo) : 0;
        iwv = cHi > cLo ? static_cast<uint32_t>(cHi - cLo) : 0;
        pad = ihv != tl.ih || iwv != tl.iw;
    }

    __aicore__ static inline int32_t Min(int32_t a, int32_t b) { return a < b ? a : b; }
    __aicore__ static inline int32_t Max(int32_t a, int32_t b) { return a > b ? a : b; }

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
